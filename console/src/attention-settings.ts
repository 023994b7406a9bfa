/**
 * How this browser calls for attention: a sound and a desktop notification, each off until the operator
 * turns it on, for emergencies at or above a severity. Kept in localStorage, so it belongs to the browser
 * (the person at this screen) rather than to the key or the tab.
 */
import { useEffect, useState } from 'preact/hooks';

const KEY = 'emergency-console.attention';

export interface AttentionSettings {
  sound: boolean;
  desktop: boolean;
  /** The lowest category severity (0 to 5) that calls for attention. */
  threshold: number;
}

export const DEFAULT_ATTENTION: AttentionSettings = { sound: false, desktop: false, threshold: 4 };

const listeners = new Set<(settings: AttentionSettings) => void>();

export function readAttentionSettings(): AttentionSettings {
  try {
    const stored = JSON.parse(localStorage.getItem(KEY) ?? 'null') as Partial<AttentionSettings> | null;
    if (!stored || typeof stored !== 'object') return DEFAULT_ATTENTION;
    const threshold = Number.isInteger(stored.threshold) && stored.threshold! >= 0 && stored.threshold! <= 5 ? stored.threshold! : DEFAULT_ATTENTION.threshold;
    return { sound: stored.sound === true, desktop: stored.desktop === true, threshold };
  } catch {
    return DEFAULT_ATTENTION;
  }
}

export function keepAttentionSettings(settings: AttentionSettings): void {
  try {
    localStorage.setItem(KEY, JSON.stringify(settings));
  } catch {
    /* storage unavailable: the settings last as long as the page */
  }
  for (const l of listeners) l(settings);
}

/** The settings, re-rendered when any part of the page (or another tab of this browser) changes them. */
export function useAttentionSettings(): AttentionSettings {
  const [settings, setSettings] = useState(readAttentionSettings);
  useEffect(() => {
    const fromStorage = (e: StorageEvent) => e.key === KEY && setSettings(readAttentionSettings());
    listeners.add(setSettings);
    window.addEventListener('storage', fromStorage);
    return () => {
      listeners.delete(setSettings);
      window.removeEventListener('storage', fromStorage);
    };
  }, []);
  return settings;
}
