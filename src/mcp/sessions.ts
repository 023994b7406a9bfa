import { randomUUID } from 'node:crypto';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { Principal } from '../domain/access/principal.js';
import { AppError } from '../errors.js';
import type { ResourceSubscriptions } from './subscriptions.js';

export interface SessionLimits {
  /** Sessions one key may hold at once on this instance (its least recently used one gives way to a new one). */
  perKey: number;
  /** Sessions this instance holds at once. */
  max: number;
  /** A session without a request or an open stream for this long ends. */
  idleMs: number;
  /** How often each session's key is checked again (revoked, expired: the session ends). */
  recheckMs: number;
}

/** One client's session: its own server and transport (for its stream and subscriptions), bound to the key that opened it. */
export interface McpSession {
  readonly id: string;
  readonly keyId: string;
  /** The credential that opened it, checked again every `recheckMs` (kept in memory only, as an open event stream does). */
  readonly token: string;
  readonly transport: WebStandardStreamableHTTPServerTransport;
  readonly server: McpServer;
  readonly subscriptions: ResourceSubscriptions;
  lastSeen: number;
  /** Open GET streams of the session. */
  streams: number;
}

/**
 * The sessions of this instance (extensions §10). `initialize` opens one; its id routes the session's own requests (subscribe,
 * unsubscribe, logging/setLevel), its GET stream and its DELETE here. Sessions live in the instance that opened them: behind a
 * load balancer, route by the Mcp-Session-Id header (sticky), and a client whose session is unknown gets 404 and initializes
 * again, as the transport specification says.
 */
export class McpSessions {
  private readonly sessions = new Map<string, McpSession>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly limits: SessionLimits,
    /** The key's principal as stored now, or null when it no longer authenticates. */
    private readonly reverify: (token: string) => Promise<Principal | null>,
    private readonly onError: (err: unknown) => void,
  ) {
    this.timer = setInterval(() => void this.sweep(), Math.min(limits.recheckMs, limits.idleMs)).unref();
  }

  get size(): number {
    return this.sessions.size;
  }

  /**
   * A transport for a new session of `principal`, registered once the transport has initialized it; 503 when the instance
   * is full.
   */
  open(
    principal: Extract<Principal, { kind: 'api_key' }>,
    token: string,
    build: (session: () => McpSession | undefined) => { server: McpServer; subscriptions: ResourceSubscriptions },
  ): { transport: WebStandardStreamableHTTPServerTransport; server: McpServer } {
    // Clients that never end their sessions, or leave their streams to die with the network, are common: the key's least
    // recently used session (one without a stream first) makes room rather than the key being locked out.
    const held = [...this.sessions.values()].filter((s) => s.keyId === principal.keyId);
    if (held.length >= this.limits.perKey) {
      const oldest = held.sort((a, b) => Number(a.streams > 0) - Number(b.streams > 0) || a.lastSeen - b.lastSeen)[0]!;
      this.end(oldest.id);
    }
    if (this.sessions.size >= this.limits.max) {
      throw new AppError('unavailable', 'This instance holds as many tool server sessions as it may; retry later.', {}, { retryAfterSeconds: 30 });
    }
    let session: McpSession | undefined;
    const { server, subscriptions } = build(() => session);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (id) => {
        session = { id, keyId: principal.keyId, token, transport, server, subscriptions, lastSeen: Date.now(), streams: 0 };
        this.sessions.set(id, session);
      },
      onsessionclosed: (id) => this.end(id),
    });
    return { transport, server };
  }

  /** The session `id` of the key `keyId`; undefined when unknown, ended, or another key's (which must look alike). */
  find(id: string, keyId: string): McpSession | undefined {
    const session = this.sessions.get(id);
    if (!session || session.keyId !== keyId) return undefined;
    session.lastSeen = Date.now();
    return session;
  }

  end(id: string): void {
    const session = this.sessions.get(id);
    if (!session) return;
    this.sessions.delete(id);
    session.subscriptions.close();
    void session.server.close().catch(this.onError);
  }

  close(): void {
    clearInterval(this.timer);
    for (const id of [...this.sessions.keys()]) this.end(id);
  }

  /** Ends idle sessions, and those whose key no longer authenticates (one check per key). */
  private async sweep(): Promise<void> {
    const now = Date.now();
    const byToken = new Map<string, McpSession[]>();
    for (const session of this.sessions.values()) {
      if (session.streams === 0 && now - session.lastSeen > this.limits.idleMs) {
        this.end(session.id);
        continue;
      }
      const list = byToken.get(session.token);
      if (list) list.push(session);
      else byToken.set(session.token, [session]);
    }
    for (const [token, sessions] of byToken) {
      try {
        if (!(await this.reverify(token))) for (const session of sessions) this.end(session.id);
      } catch (err) {
        // The database is unreachable: the sessions carry on and the next round checks again.
        this.onError(err);
      }
    }
  }
}
