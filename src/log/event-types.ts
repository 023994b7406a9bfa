/**
 * Every type of event the log records, named once: the envelope's schema, the feed's filter, webhook
 * subscriptions and the OpenAPI document (hence the typed client and the console) all derive from here.
 */

export const EMERGENCY_DECLARED = 'emergency.declared';
export const EMERGENCY_CATEGORIZED = 'emergency.categorized';
export const EMERGENCY_RESOLVED = 'emergency.resolved';
export const DELIVERY_OVERDUE = 'emergency.delivery_overdue';
export const DELIVERY_COMPLETED = 'emergency.delivery_completed';
/** A drill's run ended: appended to its exercise emergency's timeline with the run's report. */
export const DRILL_COMPLETED = 'drill.completed';

/** The changes of an emergency itself: their data is the emergency after the change. */
export const EMERGENCY_CHANGE_TYPES = [EMERGENCY_DECLARED, EMERGENCY_CATEGORIZED, EMERGENCY_RESOLVED] as const;

export const EVENT_TYPES = [...EMERGENCY_CHANGE_TYPES, DELIVERY_OVERDUE, DELIVERY_COMPLETED, DRILL_COMPLETED] as const;

export type EventType = (typeof EVENT_TYPES)[number];
