import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from '../../../context.js';
import { drillChanges, drillInput, drillList, drillRecord, drillRunList, drillRunRecord } from '../../../domain/drills/schema.js';
import { changeDrill, createDrill, deleteDrill, getDrill, listDrillRuns, listDrills, runDrillNow } from '../../../domain/drills/service.js';
import { uuid } from '../../../domain/shared/schema.js';
import { callerOf } from '../../../edge/auth.js';
import { idempotencyHeaders, writeOptionsOf } from '../../../edge/idempotency.js';
import { pageQuery } from '../params.js';
import { adminErrors, idParam } from './params.js';
import { storedAnswer } from './present.js';

const same = <T>(v: T) => v;

const REACH = '(admin keys whose subject holds the organization)';

const RUN =
  'A run declares an exercise emergency (externalId `drill:<runId>`, source `drill`, `exercise: true`) with the drill\u2019s category, ' +
  'description and acknowledgement deadline, resolves it resolveAfterSeconds later, takes the report and appends drill.completed ' +
  '(feed and webhooks) to the exercise\u2019s timeline. Each scheduled time runs once across restarts and instances; an occurrence ' +
  'missed while no process ran still runs if it is at most an hour late, older ones are skipped.';

/** An organization's drills: scheduled exercises and their reports (extensions §11). */
export const drillAdminRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const orgPath = z.object({ org_id: idParam });
    const drillPath = orgPath.extend({ drill_id: idParam });
    const notFound = adminErrors({ 404: 'not_found: no such organization or drill.' });

    r.post('/orgs/:org_id/drills', {
      config: storedAnswer(201, same),
      schema: {
        operationId: 'createDrill',
        tags: ['drills'],
        summary: `Create a drill of an organization, scheduled by an RRULE or run on demand ${REACH}.`,
        description: `${RUN} Recorded in the organization's audit log (drill.created).`,
        headers: idempotencyHeaders,
        params: orgPath,
        body: drillInput,
        response: { 201: drillRecord, ...adminErrors({ 404: 'not_found: no such organization.' }) },
      },
      handler: async (req, reply) => reply.code(201).send(await createDrill(ctx, callerOf(req), req.params.org_id, req.body, writeOptionsOf(req))),
    });
    r.get('/orgs/:org_id/drills', {
      schema: {
        operationId: 'listDrills',
        tags: ['drills'],
        summary: `An organization's drills, oldest first, with their next run ${REACH}.`,
        params: orgPath,
        querystring: pageQuery,
        response: { 200: drillList, ...adminErrors({ 404: 'not_found: no such organization.' }) },
      },
      handler: (req) => listDrills(ctx, callerOf(req), req.params.org_id, req.query),
    });
    r.get('/orgs/:org_id/drills/:drill_id', {
      schema: {
        operationId: 'getDrill',
        tags: ['drills'],
        summary: `One drill ${REACH}.`,
        params: drillPath,
        response: { 200: drillRecord, ...notFound },
      },
      handler: (req) => getDrill(ctx, callerOf(req), req.params.org_id, req.params.drill_id),
    });
    r.patch('/orgs/:org_id/drills/:drill_id', {
      config: storedAnswer(200, same),
      schema: {
        operationId: 'updateDrill',
        tags: ['drills'],
        summary: `Change a drill; a new schedule or timing schedules its next run anew, from now ${REACH}.`,
        description: "Fields left out are unchanged; null clears. Recorded in the organization's audit log (drill.updated).",
        headers: idempotencyHeaders,
        params: drillPath,
        body: drillChanges,
        response: { 200: drillRecord, ...notFound },
      },
      handler: (req) => changeDrill(ctx, callerOf(req), req.params.org_id, req.params.drill_id, req.body, writeOptionsOf(req)),
    });
    r.delete('/orgs/:org_id/drills/:drill_id', {
      schema: {
        operationId: 'deleteDrill',
        tags: ['drills'],
        summary: `Delete a drill: it runs no more; a run under way completes and keeps its report (audit: drill.deleted) ${REACH}.`,
        params: drillPath,
        response: { 200: z.object({ drillId: uuid, deleted: z.literal(true) }), ...notFound },
      },
      handler: (req) => deleteDrill(ctx, callerOf(req), req.params.org_id, req.params.drill_id, writeOptionsOf(req)),
    });
    r.post('/orgs/:org_id/drills/:drill_id/runs', {
      config: storedAnswer(202, same),
      schema: {
        operationId: 'runDrill',
        tags: ['drills'],
        summary: `Run a drill now, outside its schedule: 202 with the run as claimed ${REACH}.`,
        description: `${RUN} Its report is listed at GET .../runs as it stands, final once status is completed. Recorded in the audit log (drill.run).`,
        headers: idempotencyHeaders,
        params: drillPath,
        response: {
          202: drillRunRecord,
          ...adminErrors({ 404: 'not_found: no such organization or drill.', 409: 'conflict: a run of this drill is under way.' }),
        },
      },
      handler: async (req, reply) => reply.code(202).send(await runDrillNow(ctx, callerOf(req), req.params.org_id, req.params.drill_id, writeOptionsOf(req))),
    });
    r.get('/orgs/:org_id/drills/:drill_id/runs', {
      schema: {
        operationId: 'listDrillRuns',
        tags: ['drills'],
        summary: `A drill's runs, newest first, each with its report ${REACH}.`,
        description:
          'While a run is under way its figures are as they stand; once `status` is completed they are final and also carried by ' +
          'its drill.completed event. ackMs are nearest-rank percentiles of the acknowledging stations\u2019 first-acknowledgement times.',
        params: drillPath,
        querystring: pageQuery,
        response: { 200: drillRunList, ...notFound },
      },
      handler: (req) => listDrillRuns(ctx, callerOf(req), req.params.org_id, req.params.drill_id, req.query),
    });
  };
