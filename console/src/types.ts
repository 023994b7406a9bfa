/**
 * The records the console reads: the schemas of the typed client (clients/typescript), generated from
 * the public and admin OpenAPI documents, so a change of the API shows up here as a type error.
 */
import type { components as AdminComponents, operations as AdminOperations } from '../../clients/typescript/src/admin-schema';
import type { components, operations } from '../../clients/typescript/src/schema';
import type { EmergencyEvent } from '../../clients/typescript/src/webhooks';

type Schemas = components['schemas'];
type AdminSchemas = AdminComponents['schemas'];
type Json<Op> = Op extends { responses: { 200: { content: { 'application/json': infer Body } } } } ? Body : never;

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export type Org = Schemas['Organization'];
/** GET /me: the signed-in key, its permissions and the organizations it covers (the first 200). */
export type Me = Schemas['WhoAmI'];
export type Emergency = Schemas['Emergency'];
export type EmergencyStatus = Emergency['status'];
export type Category = Schemas['Category'];
export type EventPage = Json<operations['listEvents']>;
/**
 * An event as the live channel and the feed carry it, by `eventType`: transitions carry `data.emergency` (the
 * Emergency after the change); delivery_overdue and delivery_completed carry acknowledgement-deadline data.
 */
export type EventEnvelope = EmergencyEvent;
export type DeliveryOverdueData = Schemas['DeliveryOverdueData'];
export type DeliveryCompletedData = Schemas['DeliveryCompletedData'];
export type FeedItem = { offset: number; event: EventEnvelope };
export type DeviceStatus = Schemas['DeviceStatus'];
export type Receipts = Schemas['EmergencyReceipts'];
export type Message = Schemas['Message'];
export type Attachment = Schemas['Attachment'];
export type AuditEntry = Schemas['AuditLogEntry'];

export type ApiKey = AdminSchemas['ApiKey'];
export type Webhook = AdminSchemas['Webhook'];
export type AdminDevice = AdminSchemas['Device'];
export type Drill = AdminSchemas['Drill'];
export type DrillRun = AdminSchemas['DrillRun'];
export type Delivery = Json<AdminOperations['listWebhookDeliveries']>['items'][number];
/** Whom a key or subscription covers (`instance` only for admin keys). */
export type Subject = { type: 'instance' | 'partner' | 'enterprise' | 'org'; id?: string };
