import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

export interface McpConnection {
  client: Client;
  /** Calls a tool and returns the parsed JSON of its text content, with the raw result. */
  call(name: string, args: Record<string, unknown>): Promise<{ result: CallToolResult; json: any }>;
  /** Calls a tool that must succeed; checks that structuredContent and the text copy agree. */
  ok(name: string, args: Record<string, unknown>): Promise<any>;
  /** Calls a tool that must fail; returns its error payload `{status, error, message, ...}`. */
  fail(name: string, args: Record<string, unknown>): Promise<any>;
  close(): Promise<void>;
}

/**
 * The SDK's real client over streamable HTTP. With `sse`, requests say they prefer an event stream
 * (the SDK client itself always sends `application/json, text/event-stream`), so responses come as SSE.
 */
export async function connectMcp(
  baseUrl: string,
  key: string,
  options: { sse?: boolean; listTools?: boolean; headers?: Record<string, string> } = {},
): Promise<McpConnection> {
  const preferSse: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    if (init?.method === 'POST') headers.set('accept', 'text/event-stream, application/json');
    return fetch(input, { ...init, headers });
  };
  const transport = new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${key}`, ...options.headers } },
    ...(options.sse ? { fetch: preferSse } : {}),
  });
  const client = new Client({ name: 'emergency-api-tests', version: '1.0.0' });
  await client.connect(transport);
  // Listing first makes the client validate every structuredContent against the advertised outputSchema.
  if (options.listTools !== false) await client.listTools();
  const call = async (name: string, args: Record<string, unknown>) => {
    const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
    const first = result.content[0];
    assert.equal(first?.type, 'text');
    return { result, json: JSON.parse((first as { text: string }).text) };
  };
  return {
    client,
    call,
    async ok(name, args) {
      const { result, json } = await call(name, args);
      assert.ok(!result.isError, `${name} failed: ${JSON.stringify(json)}`);
      assert.deepEqual(result.structuredContent, json);
      return json;
    },
    async fail(name, args) {
      const { result, json } = await call(name, args);
      assert.equal(result.isError, true, `${name} unexpectedly succeeded: ${JSON.stringify(json)}`);
      assert.equal(typeof json.status, 'number');
      assert.equal(typeof json.error, 'string');
      assert.equal(typeof json.message, 'string');
      return json;
    },
    close: () => client.close(),
  };
}

/** A raw JSON-RPC POST to /mcp over fetch; returns status, headers and the parsed message (JSON or the SSE data line). */
export async function rawMcp(baseUrl: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${baseUrl}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let message: any = null;
  if (res.headers.get('content-type')?.startsWith('text/event-stream')) {
    const data = text.split('\n').find((line) => line.startsWith('data: '));
    message = data ? JSON.parse(data.slice('data: '.length)) : null;
  } else if (text) {
    message = JSON.parse(text);
  }
  return { status: res.status, headers: res.headers, message, text };
}

export const initializeRequest = (protocolVersion: string, id = 1) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw-test', version: '1.0.0' } },
});
