import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.js';
import { auditLogPage, listAuditLogsQuery } from '../../domain/audit/schema.js';
import { listAuditLogs } from '../../domain/audit/service.js';
import { userPage } from '../../domain/users/schema.js';
import { listUsers } from '../../domain/users/service.js';
import { callerOf } from '../../edge/auth.js';
import { errorResponses } from '../error-schemas.js';
import { orgPath, pageQuery } from './params.js';

/** Read-only organization data: users and the audit log. */
export const directoryRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();

    r.get('/orgs/:org_id/users', {
      schema: {
        operationId: 'listUsers',
        tags: ['users'],
        summary: 'List the users of the organization by lastName, firstName (permission: users:read).',
        params: orgPath,
        querystring: pageQuery,
        response: { 200: userPage, ...errorResponses() },
      },
      handler: (req) => listUsers(ctx, callerOf(req), req.params.org_id, req.query),
    });

    r.get('/orgs/:org_id/audit-logs', {
      schema: {
        operationId: 'listAuditLogs',
        tags: ['audit'],
        summary: 'List audit-log entries, newest first (permission: audit:read).',
        params: orgPath,
        querystring: listAuditLogsQuery,
        response: { 200: auditLogPage, ...errorResponses() },
      },
      handler: (req) => listAuditLogs(ctx, callerOf(req), req.params.org_id, req.query),
    });
  };
