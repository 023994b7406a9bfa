// Timestamps are ISO-8601 UTC text with milliseconds, which sorts correctly as text; JSON is serialized text and
// booleans are 0/1. Both dialects store the same, keeping one code path for SQLite and PostgreSQL.
export interface PartnerTable {
  id: string;
  name: string;
  created_at: string;
}
export interface EnterpriseTable {
  id: string;
  partner_id: string;
  name: string;
  created_at: string;
}
export interface OrgTable {
  id: string;
  enterprise_id: string;
  partner_id: string;
  name: string;
  created_at: string;
  /** Last offset handed out on this org's event stream; bumped under the row lock of the writing transaction. */
  event_offset: number;
  /** Highest offset removed by event retention (0: none); reading after an older offset is a 410. */
  pruned_offset: number;
  /** Seconds its devices have to acknowledge an event before it is overdue; null: no deadline. */
  ack_deadline_seconds: number | null;
}
export interface CategoryTable {
  id: string;
  org_id: string;
  name: string;
  color: string;
  response_level: string;
  severity: number;
  is_system: number;
  created_at: string;
  /** Overrides the org's acknowledgement deadline for emergencies of this category; null: the org's. */
  ack_deadline_seconds: number | null;
}
export interface UserTable {
  id: string;
  org_id: string;
  first_name: string;
  last_name: string;
  email: string;
  phone_number: string | null;
  role: string;
  access_level: string;
  status: string;
  profile_photo_url: string | null;
  owned_device_id: string | null;
  owned_device_name: string | null;
  created_at: string;
  last_login_at: string | null;
}
export interface ApiKeyTable {
  id: string;
  /** The 8 public hex characters after `enk_live_`: the lookup index. */
  key_prefix: string;
  /** Hex SHA-256 of the full plaintext key. */
  secret_hash: string;
  name: string;
  subject_type: string;
  subject_id: string;
  allowed_org_ids: string | null;
  permissions: string;
  active_until: string | null;
  status: string;
  created_at: string;
  last_used_at: string | null;
  rotated_to: string | null;
}
export interface AdminKeyTable {
  id: string;
  /** The 8 public hex characters after `enk_adm_`: the lookup index. */
  key_prefix: string;
  /** Hex SHA-256 of the full plaintext key. */
  secret_hash: string;
  name: string;
  /** `instance`, `partner` or `enterprise`. */
  subject_type: string;
  /** Null for `instance`. */
  subject_id: string | null;
  status: string;
  created_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
}
export interface EmergencyTable {
  id: string;
  org_id: string;
  status: string;
  external_id: string | null;
  category_id: string;
  source: string | null;
  description: string | null;
  occurred_at: string;
  created_at: string;
  updated_at: string;
  declared_by: string;
  location: string | null;
  metadata: string | null;
  /** Last per-emergency event sequence number. */
  sequence: number;
  /** The emergency as the API returns it (JSON), valid only while record_sequence equals sequence; null on older rows. */
  record: string | null;
  record_sequence: number | null;
  /** 1 for an exercise emergency (extensions §11), fixed at the declare. */
  exercise: number;
}
export interface ResolutionTable {
  emergency_id: string;
  org_id: string;
  resolved_at: string;
  resolved_by: string;
  resolution_note: string | null;
  metadata: string | null;
  created_at: string;
}
export interface EventTable {
  id: string;
  org_id: string;
  stream_offset: number;
  emergency_id: string;
  event_type: string;
  sequence: number;
  payload: string;
  created_at: string;
}
export interface AuditLogTable {
  id: string;
  org_id: string;
  occurred_at: string;
  event_category: string;
  event_type: string;
  actor_type: string;
  actor_id: string;
  actor_name: string | null;
  /** The API key behind an OAuth client's action (actor_type oauth_client); null otherwise. */
  actor_key_id: string | null;
  resource_type: string;
  resource_id: string;
  request_id: string | null;
  details: string | null;
}
export interface ConversationTable {
  id: string;
  org_id: string;
  emergency_id: string;
  created_at: string;
}
export interface MessageTable {
  id: string;
  org_id: string;
  conversation_id: string;
  emergency_id: string;
  content: string;
  /** The author type given on input (`agent`, `system`, `user`), or null. */
  source: string | null;
  author_name: string | null;
  created_at: string;
}
export interface AttachmentTable {
  id: string;
  org_id: string;
  message_id: string;
  /** Position in the request's `attachments`, from 0. */
  position: number;
  kind: string;
  mime_type: string | null;
  /** `data_uri`, `base64` or `url`. */
  source: string;
  /** For links: the URL exactly as supplied. */
  link_url: string | null;
  /** For stored bytes: the object key in the attachment store. */
  storage_key: string | null;
  sha256: string | null;
  size_bytes: number | null;
  caption: string | null;
  width: number | null;
  height: number | null;
  created_at: string;
}
export interface MessageDedupeTable {
  org_id: string;
  /** Hex SHA-256 over emergency, author, content, attachment hashes and captions. */
  dedupe_key: string;
  message_id: string;
  created_at: string;
}
export interface DeviceTable {
  id: string;
  org_id: string;
  name: string;
  /** The 8 public hex characters after `enk_dev_`: the lookup index. */
  token_prefix: string;
  /** Hex SHA-256 of the full plaintext token. */
  secret_hash: string;
  status: string;
  created_at: string;
  revoked_at: string | null;
  last_seen_at: string | null;
  /** The gateway connection currently holding the device; null when it is not connected. */
  connection_id: string | null;
  connected_at: string | null;
  disconnected_at: string | null;
  /** Highest org stream offset the device acknowledged. */
  acked_offset: number;
  acked_at: string | null;
}
/** One advance of a device's acknowledged offset: every event up to to_offset, acknowledged at acked_at. */
export interface DeviceAckTable {
  device_id: string;
  org_id: string;
  to_offset: number;
  acked_at: string;
}
export interface WebhookSubscriptionTable {
  id: string;
  subject_type: string;
  subject_id: string;
  allowed_org_ids: string | null;
  url: string;
  /** JSON array of event types, or null for every type. */
  event_types: string | null;
  /** `whsec_...`; kept recoverable because every delivery is signed with it. Never logged or listed. */
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: string | null;
  status: string;
  disabled_reason: string | null;
  /** Start of the current run of failed attempts; cleared by any success. */
  failing_since: string | null;
  created_at: string;
  updated_at: string;
}
export interface WebhookCursorTable {
  org_id: string;
  last_offset: number;
  updated_at: string;
}
export interface WebhookDeliveryTable {
  id: string;
  subscription_id: string;
  org_id: string | null;
  event_id: string;
  event_type: string;
  payload: string | null;
  status: string;
  attempt_count: number;
  next_attempt_at: string;
  claimed_until: string | null;
  claimed_by: string | null;
  last_response_code: number | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
}
export interface WebhookAttemptTable {
  id: string;
  delivery_id: string;
  subscription_id: string;
  org_id: string | null;
  event_id: string;
  event_type: string;
  attempt_number: number;
  started_at: string;
  duration_ms: number;
  outcome: string;
  response_code: number | null;
  response_body: string | null;
  error: string | null;
  worker_id: string;
}

/** The stored answer of a write sent with an Idempotency-Key (see migration 0009). */
export interface IdempotencyKeyTable {
  api_key_id: string;
  idem_key: string;
  /** Hex SHA-256 of the method, the path and the canonical JSON of the body. */
  fingerprint: string;
  status: number;
  body: string;
  location: string | null;
  created_at: string;
  expires_at: string;
}
/** An event's acknowledgement deadline (see migration 0013). */
export interface AckDeadlineTable {
  event_id: string;
  org_id: string;
  emergency_id: string;
  event_type: string;
  deadline_seconds: number;
  /** Half-way to the deadline: when gateways send the event again to connected devices that have not acknowledged it. */
  resend_at: string;
  deadline_at: string;
  /** `pending`, then `met` or `overdue`; an overdue one ends `completed` or `expired`. */
  state: string;
  /** The time of the emergency.delivery_overdue event. */
  overdue_at: string | null;
  /** When the row reached `met`, `completed` or `expired`. */
  closed_at: string | null;
  /** The watched event's stream offset, once the row is `overdue`. */
  event_offset: number | null;
  /** Set when an acknowledgement or a revocation may have completed an overdue event; cleared once looked at. */
  check_at: string | null;
}
/** An organization's mapping of a CAP `event` to one of its categories (see migration 0014). */
export interface CapEventMappingTable {
  id: string;
  org_id: string;
  /** The event trimmed, its white space collapsed, in lower case: what an ingested alert's event is looked up by. */
  event_key: string;
  /** The event as it was given. */
  event: string;
  category_id: string;
  created_at: string;
  updated_at: string;
}
/** An organization's own connection quotas; null: the instance's default (see migration 0015). */
export interface OrgConnectionQuotaTable {
  org_id: string;
  devices: number | null;
  streams: number | null;
  updated_at: string;
}
/** A partner's own connection quotas, over all its organizations; null: the instance's default (see migration 0015). */
export interface PartnerConnectionQuotaTable {
  partner_id: string;
  devices: number | null;
  streams: number | null;
  updated_at: string;
}
/** A live webhook worker (see migration 0010). */
export interface DeliveryWorkerTable {
  worker_id: string;
  host: string;
  pid: number;
  started_at: string;
  heartbeat_at: string;
}
/** An ingested CAP message as received (UTF-8 text, at most the ingest limit), relayed by its emergency's export. */
export interface CapOriginalTable {
  org_id: string;
  sender: string;
  identifier: string;
  document: string;
  created_at: string;
}
/** An organization's drill: a scheduled or on-demand exercise (see migration 0021). */
export interface DrillTable {
  id: string;
  org_id: string;
  name: string;
  /** Null: the organization's default category. */
  category_id: string | null;
  description: string | null;
  /** An RFC 5545 RRULE (with its DTSTART line), or null for a drill run only on demand. */
  schedule: string | null;
  ack_deadline_seconds: number;
  /** Null: the deadline plus 30 s. */
  resolve_after_seconds: number | null;
  /** The next scheduled occurrence: the timer a worker claims by compare-and-set; null when none is left. */
  next_run_at: string | null;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}
/** One run of a drill (see migration 0021). */
export interface DrillRunTable {
  id: string;
  drill_id: string;
  org_id: string;
  /** The occurrence it runs (the time it was asked for, when run on demand); unique per drill. */
  scheduled_for: string;
  /** `starting`, `running` or `completed`. */
  status: string;
  emergency_id: string | null;
  /** The exercise emergency's emergency.declared event: what the report measures. */
  event_id: string | null;
  started_at: string | null;
  /** When the exercise emergency is resolved and the report written. */
  resolve_at: string | null;
  completed_at: string | null;
  /** The report as JSON, once completed. */
  report: string | null;
  created_at: string;
}

export interface Database {
  partners: PartnerTable;
  enterprises: EnterpriseTable;
  orgs: OrgTable;
  categories: CategoryTable;
  users: UserTable;
  api_keys: ApiKeyTable;
  admin_keys: AdminKeyTable;
  emergencies: EmergencyTable;
  emergency_resolutions: ResolutionTable;
  events: EventTable;
  audit_logs: AuditLogTable;
  conversations: ConversationTable;
  messages: MessageTable;
  attachments: AttachmentTable;
  message_dedupe: MessageDedupeTable;
  devices: DeviceTable;
  device_acks: DeviceAckTable;
  webhook_subscriptions: WebhookSubscriptionTable;
  webhook_cursors: WebhookCursorTable;
  webhook_deliveries: WebhookDeliveryTable;
  webhook_attempts: WebhookAttemptTable;
  idempotency_keys: IdempotencyKeyTable;
  delivery_workers: DeliveryWorkerTable;
  ack_deadlines: AckDeadlineTable;
  cap_event_mappings: CapEventMappingTable;
  cap_originals: CapOriginalTable;
  drills: DrillTable;
  drill_runs: DrillRunTable;
  org_connection_quotas: OrgConnectionQuotaTable;
  partner_connection_quotas: PartnerConnectionQuotaTable;
  oauth_clients: OAuthClientTable;
  oauth_grants: OAuthGrantTable;
  oauth_tokens: OAuthTokenTable;
  integration_keys: IntegrationKeyTable;
  integration_settings: IntegrationSettingsTable;
}

export interface OAuthClientTable {
  client_id: string;
  client_name: string | null;
  /** The registered client metadata (RFC 7591), JSON. */
  metadata: string;
  created_at: string;
}
export interface OAuthGrantTable {
  id: string;
  client_id: string;
  client_name: string | null;
  api_key_id: string;
  /** Space-separated, as OAuth writes scopes. */
  scopes: string;
  resource: string;
  created_at: string;
  revoked_at: string | null;
  revoked_reason: string | null;
}
export interface OAuthTokenTable {
  token_prefix: string;
  secret_hash: string;
  grant_id: string;
  kind: 'code' | 'access' | 'refresh';
  scopes: string;
  expires_at: string;
  consumed_at: string | null;
  code_challenge: string | null;
  redirect_uri: string | null;
  created_at: string;
}

/** A routing key of a monitoring integration (PagerDuty Events v2), one org's (see migration 0018). */
export interface IntegrationKeyTable {
  id: string;
  org_id: string;
  kind: string;
  key_prefix: string;
  secret_hash: string;
  name: string;
  status: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}
/** How one integration's alerts of one org pick their category (see migration 0018). */
export interface IntegrationSettingsTable {
  org_id: string;
  kind: string;
  category_field: string;
  category_map: string;
  updated_at: string;
}
