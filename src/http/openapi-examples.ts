/**
 * Examples for the OpenAPI documents, built from the schemas themselves (so they always match them):
 * a value of each schema with fixed ids and times, and for errors the body of the error the response
 * describes.
 */

// biome-ignore lint/suspicious/noExplicitAny: OpenAPI fragments are walked generically (checked by the lint test)
type Json = Record<string, any>;

const SAMPLE_UUID = '0195f3a8-7c2e-7a41-9d3b-5e8f1c2a4b6d';
const SAMPLE_TIME = '2026-11-21T17:44:29.123Z';

const STATUS_CODES: Record<string, string> = {
  '400': 'bad_request',
  '401': 'unauthenticated',
  '403': 'org_not_covered',
  '404': 'not_found',
  '406': 'not_acceptable',
  '409': 'conflict',
  '410': 'events_expired',
  '413': 'payload_too_large',
  '415': 'unsupported_media_type',
  '429': 'rate_limited',
  '500': 'internal',
  '503': 'unavailable',
};

function resolve(schema: Json, components: Json): Json {
  let s = schema;
  for (let i = 0; i < 20 && s && typeof s.$ref === 'string'; i++) {
    const [, , kind, name] = (s.$ref as string).split('/');
    s = components[kind!]?.[name!];
  }
  return s ?? {};
}

/** A value of `schema`, depth-bounded (recursive schemas end in null). */
export function sampleOf(schema: Json | undefined, components: Json, depth = 0): unknown {
  if (!schema || depth > 12) return null;
  const s = resolve(schema, components);
  if (s.example !== undefined) return s.example;
  if (Array.isArray(s.examples) && s.examples.length > 0) return s.examples[0];
  if (s.const !== undefined) return s.const;
  if (Array.isArray(s.enum)) return s.enum[0];
  if (s.default !== undefined) return s.default;
  for (const key of ['oneOf', 'anyOf', 'allOf'] as const) {
    if (Array.isArray(s[key])) {
      const options = (s[key] as Json[]).filter((o) => resolve(o, components).type !== 'null');
      if (key === 'allOf') return Object.assign({}, ...options.map((o) => sampleOf(o, components, depth + 1) as object));
      return sampleOf(options[0] ?? s[key][0], components, depth + 1);
    }
  }
  const type = Array.isArray(s.type) ? (s.type as string[]).find((t) => t !== 'null') : s.type;
  switch (type) {
    case 'object': {
      const out: Json = {};
      for (const [name, prop] of Object.entries((s.properties ?? {}) as Json)) out[name] = sampleOf(prop, components, depth + 1);
      return out;
    }
    case 'array':
      return s.items ? [sampleOf(s.items, components, depth + 1)] : [];
    case 'string':
      if (s.format === 'uuid') return SAMPLE_UUID;
      if (s.format === 'date-time') return SAMPLE_TIME;
      if (s.format === 'email') return 'ada@example.com';
      if (s.format === 'uri') return 'https://example.com/';
      return 'string';
    case 'integer':
    case 'number':
      return typeof s.minimum === 'number' && s.minimum > -1e9 ? s.minimum : 1;
    case 'boolean':
      return true;
    default:
      return null;
  }
}

/** The example of one response: a sample of its schema, or the error body its description names. */
export function exampleOf(schema: Json | undefined, components: Json, status: string, description: string | undefined): unknown {
  if (!status.startsWith('4') && !status.startsWith('5')) return sampleOf(schema, components);
  // A refusal in another protocol's words (PagerDuty's `invalid event`): a sample of its own schema.
  const properties = schema ? resolve(schema, components).properties : undefined;
  if (properties && !('detail' in properties)) return sampleOf(schema, components);
  if (status === '422') {
    return { detail: [{ loc: ['body', 'categoryName'], msg: 'No category named "Fyre" in this organization.', type: 'category_not_found' }] };
  }
  const named = /^([a-z_]+):/.exec(description ?? '')?.[1];
  const code = named ?? STATUS_CODES[status] ?? 'internal';
  return { detail: { error: code, message: (description ?? code).replace(/^[a-z_]+:\s*/, '').split('. ')[0] || code } };
}
