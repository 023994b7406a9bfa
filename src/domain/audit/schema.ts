import { z } from 'zod';
import { cursorParam, isoTimestampInput, limitParam, pageOf, timestamp, uuid } from '../shared/schema.js';

export const auditLogEntry = z
  .object({
    auditLogId: uuid,
    orgId: uuid,
    occurredAt: timestamp,
    eventCategory: z.string().describe('emergency, message, api_key, webhook, device or org'),
    eventType: z.string().describe('e.g. emergency.declared'),
    actor: z.object({
      type: z
        .string()
        .describe(
          'api_key, admin_key, operator, oauth_client (a tool server client acting with the key a person approved it with), or ' +
            'integration (a monitoring system: id alertmanager:<receiver> or pagerduty:<integration key id>)',
        ),
      id: z.string(),
      name: z.string().nullable(),
      clientId: z.string().optional().describe('oauth_client only: the OAuth client id.'),
      keyId: z.string().optional().describe('oauth_client: the API key its grant was approved with; integration (Alertmanager): the API key it sent.'),
    }),
    resource: z.object({ type: z.string(), id: z.string() }),
    requestId: z.string().nullable(),
    details: z.record(z.string(), z.unknown()).nullable(),
  })
  .meta({ id: 'AuditLogEntry' });

export const auditLogPage = pageOf(auditLogEntry).meta({ id: 'AuditLogPage' });

export const listAuditLogsQuery = z
  .object({
    eventCategory: z.string().min(1).max(64).optional(),
    eventType: z.string().min(1).max(128).optional().describe('Requires eventCategory.'),
    actorId: z.string().min(1).max(256).optional(),
    since: isoTimestampInput.optional().describe('occurredAt >= since (ISO-8601).'),
    until: isoTimestampInput.optional().describe('occurredAt < until (ISO-8601).'),
    cursor: cursorParam.optional(),
    limit: limitParam,
  })
  .refine((q) => q.eventType === undefined || q.eventCategory !== undefined, {
    message: 'eventType requires eventCategory',
    path: ['eventType'],
  });

export type AuditLogEntry = z.infer<typeof auditLogEntry>;
export type ListAuditLogsQuery = z.infer<typeof listAuditLogsQuery>;
