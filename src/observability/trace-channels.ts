import { channel } from 'node:diagnostics_channel';

/**
 * Diagnostics channels at the two moments of an alert's path no outside tool sees: its commit and its frame leaving for the devices.
 * A publish without subscribers costs one check; subscribers run synchronously on the alert's path, so they must only record.
 */

/**
 * A transaction of this process that wrote events has committed, before any reader is woken; on PostgreSQL, also another
 * instance's commit announced here (org and offset only, no `written`). Message: a CommittedEvent.
 */
export const eventsCommitted = channel('emergency-api.events.committed');

/** A live frame has been written (or queued) to every live device socket of its org. */
export const deviceFrameWritten = channel('emergency-api.device.frame-written');

export interface DeviceFrameWritten {
  orgId: string;
  offset: number;
  /** Live connections of the org that have it now: written by this call, or sent before by their own replay. */
  sockets: number;
}
