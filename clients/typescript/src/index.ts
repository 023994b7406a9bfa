/**
 * TypeScript client of the emergency API: typed REST clients of the public and admin APIs
 * (openapi-fetch over types generated from the service's OpenAPI documents), webhook verification,
 * a base station's event stream, and an organization's events followed with an API key.
 */
export type { AdminClient, AdminClientOptions, CommonClientOptions, ErrorResponse, HTTPValidationError, PublicClient, PublicClientOptions } from './http.js';
export { ADMIN_API_PATH, createAdminClient, createClient, errorCode, isErrorResponse, isValidationError, PUBLIC_API_PATH } from './http.js';
export type {
  DeliveryCompletedData,
  DeliveryCompletedEvent,
  DrillCompletedData,
  DrillCompletedEvent,
  DeliveryOverdueData,
  DeliveryOverdueEvent,
  Emergency,
  EmergencyChangeEvent,
  EmergencyEvent,
  WebhookEvent,
  WebhookHeaders,
  WebhookPing,
} from './webhooks.js';
export { verifyWebhook, WebhookVerificationError } from './webhooks.js';
export type { DeviceEventContext, DeviceStreamEnd, DeviceStreamOptions, DeviceStreamStatus } from './device-stream.js';
export { connectDevice, DEVICE_STREAM_PATH, DeviceCloseCode, DeviceStream, deviceStreamUrl } from './device-stream.js';
export type { FollowedEvent, FollowEventsOptions } from './follow-events.js';
export { FollowEventsError, followEvents } from './follow-events.js';
export type { components, operations, paths } from './schema.js';
export type { components as AdminComponents, operations as AdminOperations, paths as AdminPaths } from './admin-schema.js';

import type { components } from './schema.js';

/** Shorthand for a schema of the public API: `Schema<'Emergency'>`. */
export type Schema<Name extends keyof components['schemas']> = components['schemas'][Name];
