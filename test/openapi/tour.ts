import assert from 'node:assert/strict';
import type { PrismProxy } from '../helpers/prism.js';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** `METHOD /path` of every operation of an OpenAPI document, as the document writes the path. */
export function operationsOf(document: { paths: Record<string, Record<string, unknown>> }): string[] {
  const out: string[] = [];
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of METHODS) if (item[method]) out.push(`${method.toUpperCase()} ${path}`);
  }
  return out;
}

export interface TourAnswer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

export interface TourCall {
  /** Path parameters, filled into the document's path template. */
  params?: Record<string, string>;
  query?: Record<string, string>;
  /** A JSON body (an object), or text sent as it is with its own content-type header. */
  body?: unknown;
  headers?: Record<string, string>;
  /** The key sent as a bearer token; `null` sends none. Defaults to the tour's key. */
  key?: string | null;
  /** The status the service must answer. */
  expect: number;
}

let idempotencyCounter = 0;

/**
 * Calls an API through a Prism proxy and keeps the list of the operations called. Every answer must be the
 * service's own (not one Prism made up in its place) with no violation of the document reported.
 */
export class Tour {
  readonly called = new Set<string>();

  constructor(
    private readonly proxy: PrismProxy,
    private readonly defaultKey: string,
  ) {}

  async call(method: string, template: string, call: TourCall): Promise<TourAnswer> {
    const operation = `${method} ${template}`;
    this.called.add(operation);
    let path = template;
    for (const [name, value] of Object.entries(call.params ?? {})) path = path.replace(`{${name}}`, encodeURIComponent(value));
    assert.ok(!/[{}]/.test(path), `${operation}: a path parameter is missing`);
    const query = call.query ? `?${new URLSearchParams(call.query)}` : '';
    const headers: Record<string, string> = { ...call.headers };
    const key = call.key === undefined ? this.defaultKey : call.key;
    if (key !== null) headers.authorization = `Bearer ${key}`;
    // Every POST and PATCH takes one; a fresh key per call, so no answer is a replay unless a step wants one.
    if ((method === 'POST' || method === 'PATCH') && !headers['idempotency-key']) headers['idempotency-key'] = `tour-${process.pid}-${++idempotencyCounter}`;
    let body: string | undefined;
    if (typeof call.body === 'string') body = call.body;
    else if (call.body !== undefined) {
      body = JSON.stringify(call.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(`${this.proxy.url}${path}${query}`, { method, headers, body });
    const text = await res.text();
    const where = `${operation} (${method} ${path}${query}) answered ${res.status}`;
    const violations = res.headers.get('sl-violations');
    assert.equal(violations, null, `${where}; Prism reports violations of the document: ${violations}\n${text}`);
    assert.ok(
      !(res.headers.get('content-type') ?? '').startsWith('application/problem+json'),
      `${where}: Prism answered in the service's place:\n${text}\n${this.proxy.output().slice(-4000)}`,
    );
    assert.ok(res.headers.get('x-request-id'), `${where} without X-Request-Id: the answer is not the service's`);
    assert.equal(res.status, call.expect, `${where}, expected ${call.expect}: ${text.slice(0, 2000)}`);
    let json: unknown;
    if ((res.headers.get('content-type') ?? '').startsWith('application/json')) json = JSON.parse(text);
    return { status: res.status, headers: res.headers, text, json };
  }

  /** Fails with the operations of the document that no step called, so a new route cannot go without a step. */
  assertCovered(document: { paths: Record<string, Record<string, unknown>> }, api: string): void {
    const missing = operationsOf(document).filter((op) => !this.called.has(op));
    assert.deepEqual(missing, [], `operations of the ${api} document that the tour never called: ${missing.join(', ')}`);
    const unknown = [...this.called].filter((op) => !operationsOf(document).includes(op));
    assert.deepEqual(unknown, [], `the tour called operations the ${api} document does not have: ${unknown.join(', ')}`);
  }
}
