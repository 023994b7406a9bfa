import { isJsonContentType } from '@modelcontextprotocol/sdk/shared/mediaType.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { type JSONRPCMessage, type JSONRPCRequest, JSONRPCRequestSchema, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';

/**
 * The common tool-server exchange, one JSON-RPC request answered with one JSON body, without the
 * SDK's web-standard transport. That transport builds a web Request, a Response and a body stream
 * for every call, a large share of a tool call (docs/benchmarks.md); the tool server itself (the SDK's
 * McpServer: tool lookup, argument and result validation) is the same on both paths.
 *
 * `directCall` returns the request only when the SDK's transport would hand it to the server as is
 * and answer in JSON: both media types accepted and JSON preferred, a JSON body, a supported (or
 * absent) protocol version, a single valid request that is not `initialize`. Anything else, errors
 * included, goes through the SDK's transport, which answers it.
 */
export function directCall(headers: Record<string, string | string[] | undefined>, body: unknown, prefersEventStream: boolean): JSONRPCRequest | null {
  const accept = headers.accept;
  if (typeof accept !== 'string' || !accept.includes('application/json') || !accept.includes('text/event-stream') || prefersEventStream) return null;
  const contentType = headers['content-type'];
  if (typeof contentType !== 'string' || !isJsonContentType(contentType)) return null;
  const version = headers['mcp-protocol-version'];
  if (version !== undefined && (typeof version !== 'string' || !SUPPORTED_PROTOCOL_VERSIONS.includes(version))) return null;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return null;
  // initialize (valid or not) is the SDK transport's to handle.
  if ((body as { method?: unknown }).method === 'initialize') return null;
  const parsed = JSONRPCRequestSchema.safeParse(body);
  return parsed.success ? parsed.data : null;
}

/** A transport for one request: it hands the request to the server and resolves with the server's response. */
export class SingleResponseTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport['onmessage'];
  private settle!: (message: JSONRPCMessage) => void;
  readonly response = new Promise<JSONRPCMessage>((resolve) => {
    this.settle = resolve;
  });

  async start(): Promise<void> {}

  async send(message: JSONRPCMessage): Promise<void> {
    // Only the response travels back; notifications tied to the request have no channel in a JSON
    // answer (the SDK's transport drops them too in JSON mode).
    if ('id' in message && !('method' in message)) this.settle(message);
  }

  async close(): Promise<void> {
    this.onclose?.();
  }
}
