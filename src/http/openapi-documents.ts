import { API_VERSION } from '../log/append.js';
import { describeDeviceStream, describeWebhooks } from './openapi-events.js';
import { exampleOf } from './openapi-examples.js';
import { OPTIONAL_BODY } from './openapi-generator.js';

/**
 * One route table, two documents: the public API's (`/api/public/v1/openapi.json`) and the admin
 * API's (`/api/admin/v1/openapi.json`), split by path prefix from the one description the framework
 * builds, then finished here: response headers, the error statuses every route shares, an example on
 * every response, the event envelopes (public), and only the components each document uses.
 */

// OpenAPI fragments are walked generically; their shapes are checked by the lint test, not by types.
// biome-ignore lint/suspicious/noExplicitAny: see above
type Json = Record<string, any>;

export interface OpenApiDocument {
  openapi: string;
  info: Record<string, unknown>;
  servers?: { url: string }[];
  paths: Record<string, unknown>;
  components?: Record<string, unknown>;
  [key: string]: unknown;
}

const ADMIN = '/api/admin/v1';
const PUBLIC = '/api/public/v1';
// As LICENSE and package.json say.
const LICENSE = { name: 'Apache-2.0', identifier: 'Apache-2.0' };

const HEADERS: Record<string, Json> = {
  XRequestId: { description: 'The request id: the one sent, when valid, else a new one. Also in the logs and the audit log.', schema: { type: 'string' } },
  RateLimitLimit: {
    description:
      "The capacity of this key's token bucket on this instance: the burst, twice RATE_LIMIT_PER_KEY (requests a full bucket " +
      'allows at once); the bucket refills at RATE_LIMIT_PER_KEY requests per second.',
    schema: { type: 'integer' },
  },
  RateLimitRemaining: { description: 'Requests left in the bucket now (whole tokens).', schema: { type: 'integer' } },
  RateLimitReset: { description: 'Seconds until the bucket is full again.', schema: { type: 'integer' } },
  RetryAfter: { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } },
  WWWAuthenticate: { description: 'Always `Bearer`.', schema: { type: 'string', enum: ['Bearer'] } },
  IdempotentReplayed: {
    description: '`true` when this is the stored answer of an earlier request with the same Idempotency-Key.',
    schema: { type: 'string', enum: ['true'] },
  },
};

const ref = (name: string) => ({ $ref: `#/components/headers/${name}` });

/** Refusals of the HTTP layer, before or around any route: any operation can get them (docs/api.md, Errors). */
const TRANSPORT_ERRORS: Record<string, string> = {
  '400':
    'bad_request: the request could not be read: malformed HTTP (a request the HTTP parser refuses) or a path with broken ' +
    'percent-encoding. (A body that is not valid JSON is a 422 json_invalid.)',
  '408': 'request_timeout: the request did not arrive within 30 s.',
  '431': 'headers_too_large: the request line and headers exceed 16 KiB.',
};

/** Refusals of a request body. */
const BODY_ERRORS: Record<string, string> = {
  '413': 'payload_too_large: the body exceeds the size limit.',
  '415': 'unsupported_media_type: the body is not application/json.',
};

const SUCCESS_TEXT: Record<string, string> = { '200': 'OK.', '201': 'Created.' };

/** Response headers, shared error statuses, descriptions and examples of one operation. */
function finishOperation(op: Json, method: string, components: Json, authenticated: boolean): void {
  const responses: Json = op.responses ?? {};
  op.description ??= op.summary;
  if (op[OPTIONAL_BODY]) {
    delete op[OPTIONAL_BODY];
    op.requestBody.required = false;
    op.requestBody.description = 'Optional: a request without a body (no Content-Type) is the same as `{}`.';
  }
  const shared = op.requestBody ? { ...TRANSPORT_ERRORS, ...BODY_ERRORS } : TRANSPORT_ERRORS;
  for (const [status, text] of Object.entries(shared)) {
    responses[status] ??= { description: text, content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorResponse' } } } };
  }
  const writes = method === 'post' || method === 'patch';
  for (const [status, response] of Object.entries(responses) as [string, Json][]) {
    if (response.description === 'Default Response') response.description = SUCCESS_TEXT[status] ?? 'OK.';
    const headers: Json = { 'X-Request-Id': ref('XRequestId') };
    if (authenticated && status !== '401') {
      headers['RateLimit-Limit'] = ref('RateLimitLimit');
      headers['RateLimit-Remaining'] = ref('RateLimitRemaining');
      headers['RateLimit-Reset'] = ref('RateLimitReset');
    }
    if (status === '401') headers['WWW-Authenticate'] = ref('WWWAuthenticate');
    if (status === '429' || status === '503' || (status === '409' && writes)) headers['Retry-After'] = ref('RetryAfter');
    if (writes && status.startsWith('2')) headers['Idempotent-Replayed'] = ref('IdempotentReplayed');
    response.headers = { ...headers, ...(response.headers ?? {}) };
    const media = response.content?.['application/json'];
    if (media && media.example === undefined && media.examples === undefined) media.example = exampleOf(media.schema, components, status, response.description);
  }
  op.responses = responses;
}

/** Every `$ref` target reachable from `root`, following component references transitively. */
function usedComponents(root: unknown, components: Json): Set<string> {
  const used = new Set<string>();
  const visit = (node: unknown) => {
    if (Array.isArray(node)) {
      for (const n of node) visit(n);
      return;
    }
    if (!node || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string' && value.startsWith('#/components/')) {
        if (!used.has(value)) {
          used.add(value);
          const [, , kind, name] = value.split('/');
          visit(components[kind!]?.[name!]);
        }
      } else visit(value);
    }
  };
  visit(root);
  return used;
}

/** Renames every `$ref` to `from` into `to`. */
function renameRefs(node: unknown, from: string, to: string): void {
  if (Array.isArray(node)) {
    for (const n of node) renameRefs(n, from, to);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const obj = node as Json;
  for (const [key, value] of Object.entries(obj)) {
    if (key === '$ref' && value === from) obj[key] = to;
    else renameRefs(value, from, to);
  }
}

/**
 * One component per schema: the framework names a schema's input side `<Name>Input`; where only one
 * side is used, or both sides are the same, the document keeps one, under `<Name>`. Then drops what
 * nothing references.
 */
function tidyComponents(doc: Json): void {
  const schemas: Json = doc.components.schemas ?? {};
  // JSON Schema's own `$schema` and `$id` would make every reference inside a component resolve
  // against that id instead of the document.
  for (const schema of Object.values(schemas) as Json[]) {
    delete schema.$schema;
    delete schema.$id;
  }
  const body = { paths: doc.paths, webhooks: doc.webhooks };
  let used = usedComponents(body, doc.components);
  for (const name of Object.keys(schemas)) {
    if (!name.endsWith('Input')) continue;
    const base = name.slice(0, -'Input'.length);
    const inputRef = `#/components/schemas/${name}`;
    const baseRef = `#/components/schemas/${base}`;
    if (!used.has(inputRef)) continue;
    const same = schemas[base] !== undefined && JSON.stringify(schemas[base]) === JSON.stringify(schemas[name]);
    if (!used.has(baseRef) || same) {
      schemas[base] = schemas[name];
      delete schemas[name];
      renameRefs(doc, inputRef, baseRef);
      used = usedComponents(body, doc.components);
    }
  }
  for (const kind of Object.keys(doc.components)) {
    if (kind === 'securitySchemes') continue;
    for (const name of Object.keys(doc.components[kind])) {
      if (!used.has(`#/components/${kind}/${name}`)) delete doc.components[kind][name];
    }
  }
}

function finish(doc: OpenApiDocument, prefix: string, info: Json, bearer: string, extra: (d: Json) => void): OpenApiDocument {
  const out: Json = structuredClone(doc);
  out.info = { ...info, version: API_VERSION, license: LICENSE };
  out.servers = [{ url: prefix }];
  const paths: Json = {};
  for (const [path, item] of Object.entries(out.paths as Json)) {
    const other = prefix === PUBLIC ? path.startsWith(ADMIN) : !path.startsWith(ADMIN);
    if (other) continue;
    paths[prefix === ADMIN ? path.slice(ADMIN.length) || '/' : path] = item;
  }
  out.paths = paths;
  out.components = { ...out.components, headers: HEADERS, securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: bearer } } };
  extra(out);
  for (const [path, item] of Object.entries(out.paths as Json)) {
    for (const [method, op] of Object.entries(item as Json)) {
      if (typeof op === 'object' && op !== null && 'responses' in op) finishOperation(op, method, out.components, !path.endsWith('/openapi.json'));
    }
  }
  for (const item of Object.values((out.webhooks ?? {}) as Json)) {
    for (const op of Object.values(item as Json) as Json[]) {
      for (const [status, response] of Object.entries(op.responses as Json) as [string, Json][]) {
        const media = response.content?.['application/json'];
        if (media && media.example === undefined) media.example = exampleOf(media.schema, out.components, status, response.description);
      }
    }
  }
  tidyComponents(out);
  return out as OpenApiDocument;
}

export function publicDocument(doc: OpenApiDocument): OpenApiDocument {
  return finish(
    doc,
    PUBLIC,
    {
      title: 'Emergency Notification Public API',
      description:
        'Declare, re-categorize, resolve and read emergencies; post messages; read categories, users, the audit log, the event feed ' +
        'and delivery receipts. Every request except GET /openapi.json carries `Authorization: Bearer <API_KEY>` (an admin key also ' +
        'works, for the organizations beneath it). Every response carries X-Request-Id. Every transition is pushed to base stations ' +
        '(GET /devices/v1/stream, a WebSocket) and to webhook subscribers (see `webhooks`).',
    },
    'enk_live_ + 8 hex + 64 hex (or an admin key, enk_adm_...)',
    (d) => {
      d.webhooks = { ...describeWebhooks(d.components), ...describeDeviceStream(d.components) };
    },
  );
}

export function adminDocument(doc: OpenApiDocument): OpenApiDocument {
  return finish(
    doc,
    ADMIN,
    {
      title: 'Emergency Notification Admin API',
      description:
        'Partners, enterprises, organizations, categories, users, API keys, admin keys, webhooks and devices: everything the admin CLI does. ' +
        'Every request except GET /openapi.json carries `Authorization: Bearer <ADMIN_KEY>` (enk_adm_...). A secret, token or key appears only in ' +
        'the answer that created or rotated it.',
    },
    'enk_adm_ + 8 hex + 64 hex',
    () => undefined,
  );
}
