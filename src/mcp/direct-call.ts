import { isJsonContentType } from '@modelcontextprotocol/sdk/shared/mediaType.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { type JSONRPCMessage, type JSONRPCRequest, JSONRPCRequestSchema, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';

/**
 * The common tool call (one JSON-RPC request answered in JSON) without the SDK transport's per-call web Request, Response and body stream.
 * Returns the request only when that transport would pass it on as is and answer in JSON; anything else goes through the transport.
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
    // A JSON answer has no channel for notifications tied to the request; the SDK's transport drops them too.
    if ('id' in message && !('method' in message)) this.settle(message);
  }

  async close(): Promise<void> {
    this.onclose?.();
  }
}
