/**
 * What one process of a fleet runs. Every role reads and writes the same PostgreSQL database, so any
 * number of processes of each role may run at once; `all` is one process doing everything (the only
 * role SQLite supports, since several processes cannot share one SQLite file).
 */
export const PROCESS_ROLES = ['all', 'api', 'gateway', 'worker'] as const;

export type ProcessRole = (typeof PROCESS_ROLES)[number];

/** The most processes of one role `serve --processes` (PROCESSES) runs on one machine, sharing one port. */
export const MAX_PROCESSES = 64;

/** The parts of the service a process starts. */
export interface RoleParts {
  /** REST public and admin APIs, the MCP tool server, the API docs and the console's files. */
  apis: boolean;
  /** The organizations' event streams for browsers and watchers (GET /orgs/{org_id}/stream, SSE). */
  eventStreams: boolean;
  /** Device WebSockets on /devices/v1/stream, with their half-way re-sends. */
  deviceGateway: boolean;
  /** Webhook delivery (with role `all`, only while WEBHOOK_DELIVERY_IN_SERVE is true). */
  webhookDelivery: boolean;
  /** Acknowledgement deadlines (escalations and their completion) and drills' runs. */
  deadlines: boolean;
  /** Retention: expired Idempotency-Key answers and events past EVENT_RETENTION_DAYS. */
  sweeps: boolean;
}

/** The one place that decides which parts a role starts; /healthz and /readyz are served by every role. */
export const ROLE_PARTS: Record<ProcessRole, RoleParts> = {
  all: { apis: true, eventStreams: true, deviceGateway: true, webhookDelivery: true, deadlines: true, sweeps: true },
  api: { apis: true, eventStreams: false, deviceGateway: false, webhookDelivery: false, deadlines: false, sweeps: false },
  gateway: { apis: false, eventStreams: true, deviceGateway: true, webhookDelivery: false, deadlines: false, sweeps: false },
  worker: { apis: false, eventStreams: false, deviceGateway: false, webhookDelivery: true, deadlines: true, sweeps: true },
};

export function isProcessRole(value: string): value is ProcessRole {
  return (PROCESS_ROLES as readonly string[]).includes(value);
}
