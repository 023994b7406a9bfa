import type { Migration } from 'kysely';
import * as core from './0001_core.js';
import * as messages from './0002_messages.js';
import * as devices from './0004_devices.js';
import * as webhooks from './0005_webhooks.js';
import * as leanIndexes from './0006_lean_indexes.js';
import * as emergencyRecord from './0007_emergency_record.js';
import * as recordsOnly from './0008_records_only.js';
import * as idempotencyKeys from './0009_idempotency_keys.js';
import * as deliveryWorkers from './0010_delivery_workers.js';
import * as eventFeed from './0011_event_feed.js';
import * as adminKeys from './0012_admin_keys.js';
import * as ackDeadlines from './0013_ack_deadlines.js';
import * as capMappings from './0014_cap_mappings.js';
import * as ackWatch from './0016_ack_watch.js';
import * as connectionQuotas from './0015_connection_quotas.js';
import * as oauth from './0017_oauth.js';
import * as integrations from './0018_integrations.js';
import * as capRelay from './0019_cap_relay.js';
import * as exercise from './0020_exercise.js';
import * as drills from './0021_drills.js';
import * as devicesByName from './0022_devices_by_name.js';

/** Every migration, by name; names sort in the order they are applied. */
export const migrations: Record<string, Migration> = {
  '0001_core': core,
  '0002_messages': messages,
  '0004_devices': devices,
  '0005_webhooks': webhooks,
  '0006_lean_indexes': leanIndexes,
  '0007_emergency_record': emergencyRecord,
  '0008_records_only': recordsOnly,
  '0009_idempotency_keys': idempotencyKeys,
  '0010_delivery_workers': deliveryWorkers,
  '0011_event_feed': eventFeed,
  '0012_admin_keys': adminKeys,
  '0013_ack_deadlines': ackDeadlines,
  '0014_cap_mappings': capMappings,
  '0015_connection_quotas': connectionQuotas,
  '0016_ack_watch': ackWatch,
  '0017_oauth': oauth,
  '0018_integrations': integrations,
  '0019_cap_relay': capRelay,
  '0020_exercise': exercise,
  '0021_drills': drills,
  '0022_devices_by_name': devicesByName,
};
