/**
 * Calls for attention when an emergency is declared or re-categorized at or above this browser's severity
 * threshold: the alarm tone and a desktop notification (Web Notifications API), each as the operator turned
 * them on. Exercises say EXERCISE and sound softer, so they are never taken for a real alarm.
 */
import { playAlarm } from './alarm-sound';
import { readAttentionSettings } from './attention-settings';
import { changedEmergency } from './deadlines';
import { navigate, paths } from './router';
import type { Emergency, EventEnvelope, Org } from './types';

/** What the browser allows for desktop notifications on this page. */
export type NotificationSupport = 'unsupported' | 'insecure' | NotificationPermission;

export function notificationSupport(): NotificationSupport {
  if (!window.isSecureContext) return 'insecure';
  if (typeof Notification === 'undefined') return 'unsupported';
  return Notification.permission;
}

/** Events already called for, by org and offset: the same event followed twice (board and overview) alerts once. */
const called = new Set<string>();
const MAX_REMEMBERED = 500;

/** Alerts for one event of `org`'s live channel when it calls for attention under the current settings. */
export function callForAttention(org: Org, offset: number, event: EventEnvelope): void {
  if (event.eventType !== 'emergency.declared' && event.eventType !== 'emergency.categorized') return;
  const record = changedEmergency(event);
  if (!record || record.status === 'resolved') return;
  const settings = readAttentionSettings();
  if ((!settings.sound && !settings.desktop) || record.category.severity < settings.threshold) return;
  const id = `${org.orgId}:${offset}`;
  if (called.has(id)) return;
  called.add(id);
  if (called.size > MAX_REMEMBERED) called.delete(called.values().next().value!);
  if (settings.sound) playAlarm(record.exercise ? 'exercise' : 'emergency');
  if (settings.desktop && notificationSupport() === 'granted') notify(org, event.eventType === 'emergency.declared' ? 'New' : 'Re-categorized', record);
}

/** The notification's title: EXERCISE first for an exercise, then what happened, the category and its severity. */
export function notificationTitle(what: 'New' | 'Re-categorized', record: Emergency): string {
  const change =
    what === 'New' ? (record.exercise ? 'New exercise' : 'New emergency') : record.exercise ? 'Exercise re-categorized' : 'Emergency re-categorized';
  return `${record.exercise ? 'EXERCISE · ' : ''}${change}: ${record.category.name} (severity ${record.category.severity})`;
}

function notify(org: Org, what: 'New' | 'Re-categorized', record: Emergency): void {
  const body = [org.name, record.description, record.exercise ? 'An exercise, not a real alarm.' : null].filter(Boolean).join(' — ');
  try {
    const notification = new Notification(notificationTitle(what, record), {
      body,
      // One notification per emergency: a re-categorization replaces the declare's.
      tag: `${org.orgId}:${record.emergencyId}`,
      // A real emergency stays on screen until dismissed; an exercise may fade.
      requireInteraction: !record.exercise,
    });
    notification.onclick = () => {
      window.focus();
      navigate(paths.emergency(org.orgId, record.emergencyId));
      notification.close();
    };
  } catch {
    /* a browser that offers notifications only from a service worker: the sound and the title still call */
  }
}
