import type { OutgoingAlert } from './write-alert.js';

const SANDBOX_NOTE = 'Sandbox instance: a test, not a live alert.';

/**
 * What a sandbox instance (extensions §11) exports: CAP's own Test status ("technical testing only, all recipients disregard")
 * and a note that says why, on its own alerts and on relayed ones alike.
 */
export function sandboxAlert(alert: OutgoingAlert): OutgoingAlert {
  const note = (text: string | null | undefined) => (text ? `${SANDBOX_NOTE} ${text}` : SANDBOX_NOTE);
  return {
    ...alert,
    status: 'Test',
    note: note(alert.note),
    relay: alert.relay ? { ...alert.relay, status: 'Test', note: note(alert.relay.note ?? alert.relay.elements.find((e) => e.name === 'note')?.text) } : null,
  };
}
