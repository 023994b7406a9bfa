import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.js';
import { ALERTMANAGER_MAX_ALERTS, alertmanagerPayload, alertmanagerResult, receiveAlertmanager } from '../../domain/integrations/alertmanager.js';
import { callerOf } from '../../edge/auth.js';
import { idempotencyHeaders, writeOptionsOf } from '../../edge/idempotency.js';
import { errorResponses } from '../error-schemas.js';
import { orgPath } from './params.js';

const ALERTMANAGER_EXAMPLE = {
  version: '4',
  groupKey: '{}:{alertname="DiskFull"}',
  truncatedAlerts: 0,
  status: 'firing',
  receiver: 'emergency-api',
  groupLabels: { alertname: 'DiskFull' },
  commonLabels: { alertname: 'DiskFull', severity: 'fire' },
  commonAnnotations: { summary: 'Disk full on the control room server' },
  externalURL: 'http://alertmanager.example.com:9093',
  alerts: [
    {
      status: 'firing',
      labels: { alertname: 'DiskFull', severity: 'fire', instance: 'control-room-1' },
      annotations: { summary: 'Disk full on the control room server' },
      startsAt: '2026-12-07T18:00:00.000Z',
      endsAt: '0001-01-01T00:00:00Z',
      generatorURL: 'http://prometheus.example.com:9090/graph',
      fingerprint: 'c3b1a2d4e5f60718',
    },
  ],
};

/** Monitoring systems in (extensions §12): Prometheus Alertmanager's webhook receiver. */
export const integrationRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();
    r.post('/orgs/:org_id/integrations/alertmanager', {
      config: { idempotentAnswer: (result) => ({ status: 200, body: result }) },
      schema: {
        headers: idempotencyHeaders,
        operationId: 'receiveAlertmanagerWebhook',
        tags: ['integrations'],
        summary: "Prometheus Alertmanager's webhook receiver (permission: emergencies:write).",
        description:
          'Point a webhook_configs receiver of Alertmanager here, with the write key as http_config.authorization.credentials ' +
          '(docs/integrations.md). Payload version 4. Each alert, by fingerprint: firing declares an emergency (externalId ' +
          'am:<fingerprint>, occurredAt startsAt, description from annotations.summary, else description, else alertname, ' +
          'category the one named by the severity label, else Uncategorized, labels and annotations in metadata.alertmanager) ' +
          'unless one is open; resolved resolves the open one. Repeats change nothing. ' +
          `At most ${ALERTMANAGER_MAX_ALERTS} alerts and 1 MiB a notification.`,
        params: orgPath,
        body: alertmanagerPayload.meta({ examples: [ALERTMANAGER_EXAMPLE] }),
        response: {
          200: alertmanagerResult,
          ...errorResponses({
            413: 'payload_too_large: the body exceeds 1 MiB.',
            415: 'unsupported_media_type: the body is not application/json.',
          }),
        },
      },
      handler: (req) => receiveAlertmanager(ctx, callerOf(req), req.params.org_id, req.body, writeOptionsOf(req)),
    });
  };
