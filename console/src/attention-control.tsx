import { useEffect, useId, useState } from 'preact/hooks';
import { playAlarm, soundAllowed, unlockSound } from './alarm-sound';
import { notificationSupport } from './attention';
import { type AttentionSettings, keepAttentionSettings, useAttentionSettings } from './attention-settings';
import { ModalDialog } from './components';

/** The header's button for this browser's alerts: says whether they are on and opens their settings. */
export function AttentionControl() {
  const settings = useAttentionSettings();
  const [open, setOpen] = useState(false);
  const on = settings.sound || settings.desktop;

  // Browsers allow sound only after an interaction with the page: the first click or key after a reload unlocks it.
  useEffect(() => {
    if (!settings.sound) return;
    const unlock = () => void unlockSound();
    window.addEventListener('pointerdown', unlock, { once: true });
    window.addEventListener('keydown', unlock, { once: true });
    return () => {
      window.removeEventListener('pointerdown', unlock);
      window.removeEventListener('keydown', unlock);
    };
  }, [settings.sound]);

  return (
    <>
      <button type="button" class={`secondary small attention-toggle${on ? ' on' : ''}`} aria-haspopup="dialog" onClick={() => setOpen(true)}>
        {on ? `Alerts on · severity ${settings.threshold}+` : 'Alerts off'}
      </button>
      {open && <AttentionDialog settings={settings} onClose={() => setOpen(false)} />}
    </>
  );
}

const SUPPORT_NOTE: Record<string, string> = {
  insecure: 'Desktop notifications need the console on HTTPS (or on localhost): this browser offers none to this address.',
  unsupported: 'This browser offers no desktop notifications.',
  denied: 'This browser blocks notifications from this site: allow them in the site settings (the lock or icon left of the address), then turn them on here.',
};

function AttentionDialog({ settings, onClose }: { settings: AttentionSettings; onClose: () => void }) {
  const titleId = useId();
  const ids = { sound: useId(), desktop: useId(), threshold: useId() };
  const [support, setSupport] = useState(notificationSupport);
  const [asking, setAsking] = useState(false);
  const [soundNote, setSoundNote] = useState<string | null>(null);

  const change = (patch: Partial<AttentionSettings>) => keepAttentionSettings({ ...settings, ...patch });

  async function setDesktop(wanted: boolean) {
    if (!wanted) {
      change({ desktop: false });
      return;
    }
    if (support === 'insecure' || support === 'unsupported') return;
    setAsking(true);
    try {
      // Asked from this click: browsers show the permission prompt only in answer to a gesture.
      const permission = await Notification.requestPermission();
      setSupport(permission);
      change({ desktop: permission === 'granted' });
    } finally {
      setAsking(false);
    }
  }

  async function testSound(kind: 'emergency' | 'exercise') {
    await unlockSound();
    playAlarm(kind);
    setSoundNote(soundAllowed() ? null : 'The browser has not allowed sound yet: check that this tab is not muted, then try again.');
  }

  return (
    <ModalDialog titleId={titleId} onCancel={onClose}>
      <h2 id={titleId}>Alerts in this browser</h2>
      <p class="hint">
        A sound and a desktop notification when an emergency is declared or re-categorized at or above the severity below, in the organization open here (or
        every organization on the overview). Exercises say EXERCISE and sound softer. Kept in this browser only.
      </p>
      <div class="field checkbox">
        <input
          id={ids.sound}
          type="checkbox"
          checked={settings.sound}
          onChange={(e) => {
            const wanted = (e.target as HTMLInputElement).checked;
            if (wanted) void unlockSound();
            change({ sound: wanted });
          }}
        />
        <label for={ids.sound}>Sound</label>
      </div>
      <div class="field checkbox">
        <input
          id={ids.desktop}
          type="checkbox"
          checked={settings.desktop}
          disabled={asking || support === 'insecure' || support === 'unsupported'}
          onChange={(e) => void setDesktop((e.target as HTMLInputElement).checked)}
        />
        <label for={ids.desktop}>Desktop notifications</label>
      </div>
      {SUPPORT_NOTE[support] && (
        <p class="note note-warning attention-status" role="status">
          {SUPPORT_NOTE[support]}
        </p>
      )}
      <div class="field">
        <label for={ids.threshold}>For severity</label>
        <select id={ids.threshold} value={String(settings.threshold)} onChange={(e) => change({ threshold: Number((e.target as HTMLSelectElement).value) })}>
          {[5, 4, 3, 2, 1, 0].map((n) => (
            <option key={n} value={String(n)}>
              {n === 5 ? '5 only' : `${n} and above`}
            </option>
          ))}
        </select>
      </div>
      {soundNote && (
        <p class="note note-warning attention-status" role="status">
          {soundNote}
        </p>
      )}
      <div class="actions">
        <button type="button" class="secondary" onClick={() => void testSound('emergency')}>
          Test sound
        </button>
        <button type="button" class="secondary" onClick={() => void testSound('exercise')}>
          Test exercise sound
        </button>
        <button type="button" class="primary" onClick={onClose}>
          Done
        </button>
      </div>
    </ModalDialog>
  );
}
