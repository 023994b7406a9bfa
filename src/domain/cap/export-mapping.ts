import type { EmergencyRecord } from '../emergencies/schema.js';

/**
 * How an emergency becomes the fields of a CAP 1.2 `info` and `area` (docs/cap.md shows the same tables). Categories are the
 * organization's own names, so the CAP category is chosen by words in the name; the first row that matches wins.
 */

export const CAP_CATEGORIES = ['Geo', 'Met', 'Safety', 'Security', 'Rescue', 'Fire', 'Health', 'Env', 'Transport', 'Infra', 'CBRNE', 'Other'] as const;
export type CapCategory = (typeof CAP_CATEGORIES)[number];

export const CAP_CATEGORY_BY_NAME: readonly [RegExp, CapCategory][] = [
  [/\b(fire|smoke|wildfire|burn)/i, 'Fire'],
  [/\b(medical|health|injur|ambulance|cardiac|overdose|illness|pandemic)/i, 'Health'],
  [/\b(weather|storm|tornado|hurricane|cyclone|flood|snow|blizzard|heat|wind|hail|lightning)/i, 'Met'],
  [/\b(earthquake|tsunami|landslide|volcan|avalanche)/i, 'Geo'],
  [/\b(hazmat|chemical|biological|radiation|radiolog|nuclear|gas leak|explosi)/i, 'CBRNE'],
  [/\b(lockdown|lock down|shooter|intruder|threat|bomb|weapon|violence|security|secure|hold)/i, 'Security'],
  [/\b(missing|rescue|abduct|trapped)/i, 'Rescue'],
  [/\b(evacuat|shelter|safety)/i, 'Safety'],
  [/\b(power|outage|utility|utilities|water main|network)/i, 'Infra'],
  [/\b(traffic|transport|vehicle|road|rail|aviation)/i, 'Transport'],
  [/\b(pollution|spill|environment|air quality)/i, 'Env'],
];

/** The CAP category of an emergency category, by its name; `Other` when no row matches (Uncategorized among them). */
export function capCategoryOf(categoryName: string): CapCategory {
  return CAP_CATEGORY_BY_NAME.find(([pattern]) => pattern.test(categoryName))?.[1] ?? 'Other';
}

export type CapSeverity = 'Extreme' | 'Severe' | 'Moderate' | 'Minor' | 'Unknown';

/** A category's severity (0..5) as CAP's: 5 Extreme, 4 Severe, 3 Moderate, 1 and 2 Minor, 0 (Uncategorized) Unknown. */
export const CAP_SEVERITY_BY_LEVEL: readonly CapSeverity[] = ['Unknown', 'Minor', 'Minor', 'Moderate', 'Severe', 'Extreme'];

export function capSeverityOf(severity: number): CapSeverity {
  return CAP_SEVERITY_BY_LEVEL[Math.max(0, Math.min(5, Math.trunc(severity)))] ?? 'Unknown';
}

/**
 * A time as CAP writes it: seconds, no fraction, an explicit offset, UTC as `-00:00` (CAP 1.2 §3.3.2 forbids `Z`), e.g.
 * `2026-11-27T05:00:00-00:00`.
 */
export function capTime(iso: string): string {
  return `${new Date(iso).toISOString().slice(0, 19)}-00:00`;
}

export interface CapArea {
  areaDesc: string;
  /** `lat,lon radius` (WGS 84, radius in km), or null when the location has no coordinates. */
  circle: string | null;
}

/** The emergency's location as a CAP area: a circle of radius 0 at its coordinates, described by its floor id; null without one. */
export function capAreaOf(location: EmergencyRecord['location']): CapArea | null {
  if (!location) return null;
  const { latitude, longitude, floorId } = location;
  const point = latitude !== null && longitude !== null ? `${decimal(latitude)},${decimal(longitude)}` : null;
  if (point === null && !floorId) return null;
  return { areaDesc: floorId || point!, circle: point && `${point} 0` };
}

/** Plain decimal degrees (never exponent notation), to 7 places at most. */
function decimal(degrees: number): string {
  return degrees.toFixed(7).replace(/\.?0+$/, '');
}
