import { operatorCaller } from '../domain/access/principal.js';
import { drillInput } from '../domain/drills/schema.js';
import { createDrill, deleteDrill, listDrillRuns, listDrills, runDrillNow } from '../domain/drills/service.js';
import { path } from './admin-api.js';
import { type AdminList, adminCommand } from './admin-command.js';
import { type CliCommand, type CliOption, type CliPositional, requireOption, UsageError } from './command.js';

const ORG: CliOption = { type: 'string', value: 'ID', required: true, description: 'the org' };
const ID: CliPositional[] = [{ name: 'ID', description: 'the drill id' }];

const DRILLS: AdminList<string, Awaited<ReturnType<typeof listDrills>>['items'][number]> = {
  page: (ctx, orgId, page) => listDrills(ctx, operatorCaller(), orgId, page),
  route: (orgId) => path`/orgs/${orgId}/drills`,
};

const RUNS: AdminList<{ orgId: string; drillId: string }, Awaited<ReturnType<typeof listDrillRuns>>['items'][number]> = {
  page: (ctx, { orgId, drillId }, page) => listDrillRuns(ctx, operatorCaller(), orgId, drillId, page),
  route: ({ orgId, drillId }) => path`/orgs/${orgId}/drills/${drillId}/runs`,
};

/** A whole number from an option, or undefined when it is absent. */
function wholeNumber(value: string | boolean | undefined, flag: string): number | undefined {
  if (typeof value !== 'string') return undefined;
  if (!/^\d+$/.test(value)) throw new UsageError(`--${flag} must be a whole number`);
  return Number(value);
}

const DETAILS = [
  'A run declares an exercise emergency, resolves it after --resolve-after seconds (default: the deadline plus 30) and records a',
  'report (admin drill runs). Scheduled runs need a running server (serve, or its worker role); an occurrence missed while none',
  'ran still runs if it is at most an hour late. docs/drills.md has the details.',
];

/** An org's drills: scheduled exercises and their reports (docs/drills.md). */
export const drillCommands: Record<string, CliCommand> = {
  'admin drill create': adminCommand({
    summary: 'create a drill of an org, scheduled by an RRULE or run on demand; prints it with its next run',
    options: {
      org: ORG,
      name: { type: 'string', value: 'TEXT', required: true, description: 'what the drill is, e.g. "Monthly siren test"' },
      schedule: { type: 'string', value: 'RRULE', description: 'an RFC 5545 RRULE, e.g. "FREQ=MONTHLY;BYDAY=1MO;BYHOUR=10" (default: on demand only)' },
      'ack-deadline': { type: 'string', value: 'SECONDS', required: true, description: 'seconds the base stations have to acknowledge (5 to 3600)' },
      'resolve-after': { type: 'string', value: 'SECONDS', description: 'seconds from the alert to the resolve and report (default: the deadline plus 30)' },
      'category-id': { type: 'string', value: 'ID', description: "the exercise's category (default: Uncategorized)" },
      description: { type: 'string', value: 'TEXT', description: 'what base stations show, e.g. "This is a drill"' },
    },
    details: DETAILS,
    input: ({ values }) => ({
      orgId: requireOption(values, 'org'),
      // Validated here by the service's own schema, so that a bad value is the same usage error in both modes.
      body: drillInput.parse({
        name: requireOption(values, 'name'),
        ackDeadlineSeconds: wholeNumber(requireOption(values, 'ack-deadline'), 'ack-deadline'),
        ...(typeof values.schedule === 'string' ? { schedule: values.schedule } : {}),
        ...(typeof values['resolve-after'] === 'string' ? { resolveAfterSeconds: wholeNumber(values['resolve-after'], 'resolve-after') } : {}),
        ...(typeof values['category-id'] === 'string' ? { categoryId: values['category-id'] } : {}),
        ...(typeof values.description === 'string' ? { description: values.description } : {}),
      }),
    }),
    local: (ctx, { orgId, body }) => createDrill(ctx, operatorCaller(), orgId, body),
    route: ({ orgId, body }) => ({ post: DRILLS.route(orgId), body }),
  }),
  'admin drill list': adminCommand({
    summary: "list an org's drills with their schedule and next run",
    options: { org: ORG },
    columns: ['drillId', 'name', 'schedule', 'ackDeadlineSeconds', 'resolveAfterSeconds', 'nextRunAt'],
    input: ({ values }) => requireOption(values, 'org'),
    read: async (read, orgId) => ({ items: await read(DRILLS, orgId) }),
  }),
  'admin drill run': adminCommand({
    summary: 'run a drill now, outside its schedule; prints the run (its report: admin drill runs)',
    positionals: ID,
    options: { org: ORG },
    details: DETAILS,
    input: ({ values, positionals }) => ({ orgId: requireOption(values, 'org'), drillId: positionals[0]! }),
    local: (ctx, { orgId, drillId }) => runDrillNow(ctx, operatorCaller(), orgId, drillId),
    route: ({ orgId, drillId }) => ({ post: path`/orgs/${orgId}/drills/${drillId}/runs` }),
  }),
  'admin drill runs': adminCommand({
    summary: "list a drill's runs, newest first, with their reports",
    positionals: ID,
    options: { org: ORG, limit: { type: 'string', value: 'N', description: 'at most this many runs (default 20)' } },
    columns: ['runId', 'scheduledFor', 'status', 'targeted', 'acknowledged', 'silentDevicesTotal', 'passed'],
    input: ({ values, positionals }) => ({
      orgId: requireOption(values, 'org'),
      drillId: positionals[0]!,
      limit: wholeNumber(values.limit, 'limit') ?? 20,
    }),
    read: async (read, { orgId, drillId, limit }) => ({ items: await read(RUNS, { orgId, drillId }, limit) }),
  }),
  'admin drill delete': adminCommand({
    summary: 'delete a drill: it runs no more; a run under way completes and keeps its report',
    positionals: ID,
    options: { org: ORG },
    input: ({ values, positionals }) => ({ orgId: requireOption(values, 'org'), drillId: positionals[0]! }),
    local: (ctx, { orgId, drillId }) => deleteDrill(ctx, operatorCaller(), orgId, drillId),
    route: ({ orgId, drillId }) => ({ delete: path`/orgs/${orgId}/drills/${drillId}` }),
  }),
};
