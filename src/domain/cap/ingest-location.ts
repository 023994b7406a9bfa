/** The geometry of one `area` of an ingested alert, as written. */
export interface IncomingArea {
  polygons: string[];
  circles: string[];
}

export interface Point {
  latitude: number;
  longitude: number;
}

const NUMBER = '[-+]?(?:\\d+(?:\\.\\d*)?|\\.\\d+)';
const PAIR = new RegExp(`^(${NUMBER}),(${NUMBER})$`);

/**
 * An ingested alert's location: the center of its first area's first `circle`; else the centroid of its first `polygon`
 * (computed on the plane of latitude and longitude, which suits areas of a building or a town, not ones across the
 * antimeridian); else none. Areas described only by `areaDesc` or `geocode` give no location.
 */
export function locationOfAreas(areas: IncomingArea[]): Point | null {
  for (const area of areas) {
    for (const circle of area.circles) {
      const center = pointOf(circle.split(/\s+/)[0] ?? '');
      if (center) return center;
    }
  }
  for (const area of areas) {
    for (const polygon of area.polygons) {
      const centroid = centroidOf(polygon);
      if (centroid) return centroid;
    }
  }
  return null;
}

/** A `lat,lon` pair in WGS 84 degrees; null when it is not one. */
function pointOf(text: string): Point | null {
  const m = PAIR.exec(text.trim());
  if (!m) return null;
  const latitude = Number(m[1]);
  const longitude = Number(m[2]);
  if (!(Math.abs(latitude) <= 90 && Math.abs(longitude) <= 180)) return null;
  return { latitude, longitude };
}

/** The area centroid of a closed ring of `lat,lon` pairs (the shoelace formula); the mean of its vertices when it has no area. */
function centroidOf(polygon: string): Point | null {
  const points: Point[] = [];
  for (const pair of polygon.split(/\s+/)) {
    if (pair === '') continue;
    const point = pointOf(pair);
    if (!point) return null;
    points.push(point);
  }
  const first = points[0];
  const last = points.at(-1);
  // CAP rings repeat their first point last; the formula wants each vertex once.
  if (first && last && points.length > 1 && first.latitude === last.latitude && first.longitude === last.longitude) points.pop();
  if (points.length === 0) return null;
  let twiceArea = 0;
  let lat = 0;
  let lon = 0;
  for (let i = 0; i < points.length; i++) {
    const a = points[i]!;
    const b = points[(i + 1) % points.length]!;
    const cross = a.longitude * b.latitude - b.longitude * a.latitude;
    twiceArea += cross;
    lon += (a.longitude + b.longitude) * cross;
    lat += (a.latitude + b.latitude) * cross;
  }
  if (Math.abs(twiceArea) < 1e-12) {
    return {
      latitude: points.reduce((s, p) => s + p.latitude, 0) / points.length,
      longitude: points.reduce((s, p) => s + p.longitude, 0) / points.length,
    };
  }
  return { latitude: lat / (3 * twiceArea), longitude: lon / (3 * twiceArea) };
}
