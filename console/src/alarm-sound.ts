/**
 * The alarm tone, made with the Web Audio API (an oscillator, no audio file). Browsers start an AudioContext
 * suspended until the person has interacted with the page, so it is created or resumed from a click.
 */
export type AlarmKind = 'emergency' | 'exercise';

let context: AudioContext | null = null;

/** Creates or resumes the audio context; call it from a click or key press so the browser allows sound. */
export async function unlockSound(): Promise<void> {
  context ??= new AudioContext();
  if (context.state === 'suspended') await context.resume().catch(() => undefined);
}

/** True once the browser lets this page play sound. */
export function soundAllowed(): boolean {
  return context?.state === 'running';
}

/** Tones of each alarm as [frequency Hz, start s, length s]: a real emergency alternates two pitches, an exercise is one soft low pitch, twice. */
const PATTERNS: Record<AlarmKind, { wave: OscillatorType; tones: [number, number, number][] }> = {
  emergency: {
    wave: 'square',
    tones: [
      [880, 0, 0.22],
      [660, 0.25, 0.22],
      [880, 0.5, 0.22],
      [660, 0.75, 0.22],
    ],
  },
  exercise: {
    wave: 'sine',
    tones: [
      [440, 0, 0.3],
      [440, 0.5, 0.3],
    ],
  },
};

/** Plays the alarm; false when the browser does not allow sound yet (no interaction with the page so far). */
export function playAlarm(kind: AlarmKind): boolean {
  if (!context) {
    // Without any interaction yet, a context would only start suspended.
    if (navigator.userActivation && !navigator.userActivation.hasBeenActive) return false;
    context = new AudioContext();
  }
  if (context.state === 'suspended') void context.resume();
  const { wave, tones } = PATTERNS[kind];
  const start = context.currentTime + 0.02;
  for (const [frequency, at, length] of tones) {
    const oscillator = context.createOscillator();
    const gain = context.createGain();
    oscillator.type = wave;
    oscillator.frequency.value = frequency;
    // A short ramp in and out, so the tone does not click.
    gain.gain.setValueAtTime(0, start + at);
    gain.gain.linearRampToValueAtTime(0.15, start + at + 0.02);
    gain.gain.setValueAtTime(0.15, start + at + length - 0.03);
    gain.gain.linearRampToValueAtTime(0, start + at + length);
    oscillator.connect(gain).connect(context.destination);
    oscillator.start(start + at);
    oscillator.stop(start + at + length);
  }
  return context.state === 'running';
}
