import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';

/** An origin as browsers send it: scheme, lower-case host and a port only when not the scheme's default; null when not one. */
function normalOrigin(origin: string): string | null {
  try {
    const url = new URL(origin);
    return url.origin === 'null' ? null : url.origin;
  } catch {
    return null;
  }
}

/**
 * The MCP specification's rule against DNS rebinding: a page on another site whose name resolves to this server must not be
 * able to call its tools, so a request whose Origin is present and neither the server's own nor in MCP_ALLOWED_ORIGINS is 403.
 * The server's own origin is PUBLIC_BASE_URL, or the loopback names at the port the request came in on; never the Host header,
 * which a rebinding page controls. Requests without an Origin (agents, the SDK's clients) are not browsers' and pass.
 */
export function foreignOriginRefusal(config: Pick<Config, 'PUBLIC_BASE_URL' | 'MCP_ALLOWED_ORIGINS'>) {
  const allowed = new Set(config.MCP_ALLOWED_ORIGINS.map(normalOrigin).filter((o): o is string => o !== null));
  if (config.PUBLIC_BASE_URL) allowed.add(config.PUBLIC_BASE_URL);
  const ownOrigins = (port: number | undefined) =>
    config.PUBLIC_BASE_URL || port === undefined ? [] : [`http://localhost:${port}`, `http://127.0.0.1:${port}`, `http://[::1]:${port}`];

  return async (request: FastifyRequest, reply: FastifyReply) => {
    const header = request.headers.origin;
    if (header === undefined) return;
    const origin = normalOrigin(header);
    if (origin !== null && (allowed.has(origin) || ownOrigins(request.socket.localPort).includes(origin))) return;
    return reply
      .code(403)
      .type('application/json')
      .send(
        JSON.stringify({
          jsonrpc: '2.0',
          error: { code: -32000, message: `Forbidden: the Origin ${JSON.stringify(header)} may not call this tool server (MCP_ALLOWED_ORIGINS).` },
          id: null,
        }),
      );
  };
}
