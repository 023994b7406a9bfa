import type { IncomingMessage } from 'node:http';
import type { Config } from '../../config.js';

export const MCP_PATH = '/mcp';
export const PROTECTED_RESOURCE_PATH = `/.well-known/oauth-protected-resource${MCP_PATH}`;
export const AUTHORIZATION_SERVER_PATH = '/.well-known/oauth-authorization-server';

const LOOPBACK_HOST = /^(?:localhost|127\.0\.0\.1|\[::1\])(?::\d{1,5})?$/i;

/**
 * This server's public origin, the authorization server's issuer and the base of the tool server's URL: PUBLIC_BASE_URL, or,
 * without it (a local `npm start`), the loopback name the request used at the port it came in on. Another Host header is
 * never taken: a rebinding page or a forged header would otherwise name the issuer.
 */
export function publicOrigin(config: Pick<Config, 'PUBLIC_BASE_URL'>, request: IncomingMessage): string {
  if (config.PUBLIC_BASE_URL) return config.PUBLIC_BASE_URL;
  const host = request.headers.host;
  const port = request.socket.localPort;
  if (host && LOOPBACK_HOST.test(host)) {
    const url = new URL(`http://${host}`);
    if (url.port === '' || url.port === String(port)) return `http://${url.hostname}${port !== undefined && port !== 80 ? `:${port}` : ''}`;
  }
  return `http://127.0.0.1${port !== undefined && port !== 80 ? `:${port}` : ''}`;
}

/** The tool server's URL: the resource its tokens are bound to (RFC 8707). */
export const mcpResourceOf = (config: Pick<Config, 'PUBLIC_BASE_URL'>, request: IncomingMessage): string => `${publicOrigin(config, request)}${MCP_PATH}`;
