/** The records the console reads, as the public and admin APIs answer them (see their OpenAPI documents). */

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface Org {
  orgId: string;
  name: string;
  enterpriseId: string;
  enterpriseName: string;
  partnerId: string;
  partnerName: string;
}

export type EmergencyStatus = 'declared' | 'categorized' | 'resolved';

export interface Actor {
  id: string | null;
  name: string | null;
  type?: string;
}

export interface Emergency {
  emergencyId: string;
  orgId: string;
  status: EmergencyStatus;
  externalId: string | null;
  category: { id: string; name: string; color: string; severity: number };
  source: string | null;
  description: string | null;
  occurredAt: string;
  createdAt: string;
  resolvedAt: string | null;
  resolvedBy: Actor | null;
  declaredBy: Actor | null;
  location: { latitude: number | null; longitude: number | null; floorId: string | null } | null;
  resolutionNote: string | null;
  metadata: Record<string, unknown> | null;
}

export interface Category {
  categoryId: string;
  name: string;
  color: string;
  severity: number;
  responseLevel?: string | null;
}

export interface EventEnvelope {
  eventId: string;
  eventType: string;
  apiVersion: string;
  createdAt: string;
  orgId: string;
  emergencyId: string;
  sequence: number;
  data: { emergency?: Emergency } & Record<string, unknown>;
}

export interface FeedItem {
  offset: number;
  event: EventEnvelope;
}

export interface EventPage {
  items: FeedItem[];
  nextCursor: string | null;
  lastOffset: number;
}

export interface DeviceStatus {
  deviceId: string;
  name: string;
  status: 'active' | 'revoked';
  online: boolean;
  connectedAt: string | null;
  lastSeenAt: string | null;
  ackedOffset: number;
  ackedAt: string | null;
  lag: number;
}

export interface EventReceipt {
  eventId: string;
  eventType: string;
  sequence: number;
  offset: number;
  createdAt: string;
  devices: {
    targeted: number;
    acknowledged: number;
    pending: { deviceId: string; name: string; online: boolean; ackedOffset: number }[];
    acknowledgedBy?: { deviceId: string; name: string; acknowledgedAt: string | null }[];
  };
  webhooks: { targeted: number; succeeded: number; failed: number; pending: number };
}

export interface Receipts {
  emergencyId: string;
  events: EventReceipt[];
}

export interface Attachment {
  attachmentId: string;
  kind: string;
  mimeType: string | null;
  url: string | null;
  source: 'data_uri' | 'base64' | 'url' | null;
  sizeBytes: number | null;
  caption: string | null;
  width: number | null;
  height: number | null;
  name?: string | null;
}

export interface Message {
  messageId: string;
  content: string;
  source: string | null;
  author?: { type?: string; id?: string | null; name?: string | null } | null;
  createdAt: string | null;
  attachments: Attachment[];
}

export interface Subject {
  type: 'instance' | 'partner' | 'enterprise' | 'org';
  id?: string;
}

export interface ApiKey {
  apiKeyId: string;
  name: string;
  subject: Subject;
  permissions: ('read' | 'write')[];
  allowedOrgIds: string[] | null;
  activeUntilDate: string | null;
  status: 'active' | 'inactive';
  createdAt: string;
  lastUsedAt: string | null;
  key?: string;
  previousKeyExpiresAt?: string;
}

export interface Webhook {
  webhookId: string;
  url: string;
  subject: Subject;
  allowedOrgIds: string[] | null;
  eventTypes: string[] | null;
  status: 'active' | 'disabled';
  disabledReason: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface Attempt {
  at: string;
  responseStatus: number | null;
  latencyMs: number;
  error: string | null;
}

export interface Delivery {
  deliveryId: string;
  eventId: string;
  eventType: string;
  orgId: string | null;
  status: string;
  attempts: Attempt[];
}

export interface AdminDevice {
  deviceId: string;
  orgId: string;
  name: string;
  status: 'active' | 'revoked';
  createdAt: string;
  revokedAt: string | null;
  token?: string;
}

export interface AuditEntry {
  auditLogId: string;
  orgId: string;
  occurredAt: string;
  eventCategory: string;
  eventType: string;
  actor: { type: string; id: string; name: string | null };
  resource: { type: string; id: string };
  requestId: string | null;
  details: Record<string, unknown> | null;
}
