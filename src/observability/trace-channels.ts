import { channel } from 'node:diagnostics_channel';

/**
 * Diagnostics channels (node:diagnostics_channel) at the two moments of an alert's path that no
 * outside tool can see: its commit, and its frame leaving for the org's base stations. A tracer or an
 * APM agent subscribes to them in-process, as it does to Node's `http.server.request.start` and
 * Fastify's `tracing:fastify.request.handler:start`; with nobody subscribed a publish costs one check.
 * Subscribers run synchronously on the alert's path: they must only record.
 */

/**
 * A transaction of this process that wrote events has committed, before any reader is woken; on PostgreSQL
 * with several instances, also another instance's commit once it is announced here (its message carries
 * only the org and offset, no `written`). Message: a CommittedEvent.
 */
export const eventsCommitted = channel('emergency-api.events.committed');

/** A live frame has been written (or queued) to every live device socket of its org. */
export const deviceFrameWritten = channel('emergency-api.device.frame-written');

export interface DeviceFrameWritten {
  orgId: string;
  /** The event's offset in the org's stream. */
  offset: number;
  /** Live connections of the org that have it now: written by this call, or sent before by their own replay. */
  sockets: number;
}
