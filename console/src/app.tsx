import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { ApiError, onUnauthorized, pub, unwrap, type WhoAmI, whoAmI } from './api';
import { AttentionControl } from './attention-control';
import { callForAttention } from './attention';
import { ErrorNote, Link, Loading, NameDialog } from './components';
import { useDocumentTitle } from './document-title';
import { type Listener, OrgContext, type OrgScope, type Session, SessionContext, useSession } from './context';
import { ApiKeysPage } from './pages/api-keys';
import { AuditPage } from './pages/audit';
import { BoardPage } from './pages/board';
import { DevicesPage } from './pages/devices';
import { EmergencyPage } from './pages/emergency';
import { OrganizationsPage } from './pages/organizations';
import { SignIn } from './pages/sign-in';
import { WebhooksPage } from './pages/webhooks';
import { DrillsPage } from './pages/drills';
import { navigate, parse, paths, type Route, useLocation } from './router';
import { clearSession, currentKey, currentName, keepName, keyKind } from './session';
import { loadOpenEmergencies, NO_OPEN, type OpenEmergencies, withLoadedOpen, withOpenEvent } from './open-emergencies';
import { OrgStream, type StreamState } from './stream';
import type { Org } from './types';

function OrgLayout({ orgId, title, children }: { orgId: string; title: string; children: ComponentChildren }) {
  const session = useSession();
  const listeners = useMemo(() => new Set<Listener>(), []);
  // The organization's name and place, from the organizations GET /me (and GET /orgs past it) listed.
  const org = useMemo<Org | null>(() => session.orgs.find((o) => o.orgId.toLowerCase() === orgId.toLowerCase()) ?? null, [session.orgs, orgId]);
  const orgError = org ? null : new ApiError(403, 'org_not_covered', 'This key does not cover the requested organization.');
  const canWrite = session.me.permissions.some((p) => p === 'write' || p === 'emergencies:write');
  const [streamState, setStreamState] = useState<StreamState>('connecting');
  const [streamError, setStreamError] = useState<unknown>(null);
  /** Bumped when the live channel has to start over (events past retention). */
  const [epoch, setEpoch] = useState(0);
  /** The channel's start for the current epoch; `after` is null when the key may not follow it. */
  const [channel, setChannel] = useState<{ epoch: number; after: number | null } | null>(null);
  /** The org's open emergencies for the tab title and the board's count; null until read or when the key may not list them. */
  const [open, setOpen] = useState<OpenEmergencies | null>(null);
  const [openRead, setOpenRead] = useState(false);
  const openCount = open && openRead ? open.records.size : null;
  useDocumentTitle(title, openCount);

  // Where the live channel starts: the newest offset, asked before any page loads its data. Pages
  // mount (and load again on a new generation) only once it is known, so an event committed between
  // a page's load and the channel's start cannot fall between the two.
  useEffect(() => {
    if (!org) return;
    let cancelled = false;
    setStreamError(null);
    (async () => {
      for (let attempt = 0; !cancelled; attempt++) {
        try {
          const { lastOffset } = await unwrap(pub().GET('/orgs/{org_id}/events', { params: { path: { org_id: org.orgId }, query: { limit: 1 } } }));
          if (!cancelled) setChannel({ epoch, after: lastOffset });
          return;
        } catch (err) {
          if (err instanceof ApiError && (err.status === 401 || err.status === 403)) {
            // No live channel for this key; the pages still show what it may read.
            if (!cancelled) {
              setStreamError(err);
              setChannel({ epoch, after: null });
            }
            return;
          }
          setStreamState('reconnecting');
          await new Promise((r) => setTimeout(r, Math.min(8000, 500 * 2 ** attempt)));
        }
      }
    })();
    return () => {
      cancelled = true;
    };
  }, [org, epoch]);

  // The open emergencies, read once the channel's start is known (like the pages' lists) and kept by its events.
  useEffect(() => {
    if (!org || !channel) return;
    let cancelled = false;
    setOpen(NO_OPEN);
    setOpenRead(false);
    loadOpenEmergencies(org.orgId).then(
      (loaded) => {
        if (cancelled) return;
        setOpen((current) => withLoadedOpen(current ?? NO_OPEN, loaded));
        setOpenRead(true);
      },
      () => !cancelled && setOpen(null),
    );
    return () => {
      cancelled = true;
    };
  }, [org, channel]);

  // The live channel itself, resumed from the last offset received after any drop.
  useEffect(() => {
    if (!org || channel?.after == null) return;
    const stream = new OrgStream(org.orgId, channel.after, {
      onEvent: (offset, event) => {
        setOpen((current) => (current ? withOpenEvent(current, event) : current));
        callForAttention(org, offset, event);
        for (const l of listeners) l(offset, event);
      },
      onState: (state) => setStreamState(state),
      onForbidden: (err) => setStreamError(err),
      onExpired: () => setEpoch((e) => e + 1),
    });
    stream.start();
    return () => stream.stop();
  }, [org, listeners, channel]);

  const scope = useMemo<OrgScope | null>(
    () =>
      org && channel
        ? {
            org,
            canWrite,
            streamState,
            openCount,
            generation: channel.epoch,
            subscribe: (listener: Listener) => {
              listeners.add(listener);
              return () => {
                listeners.delete(listener);
              };
            },
          }
        : null,
    [org, channel, canWrite, streamState, openCount, listeners],
  );

  if (orgError) {
    return (
      <main id="main" class="page">
        <h1>Organization</h1>
        <ErrorNote error={orgError} />
        <p>
          <Link href={paths.home()}>Choose another organization</Link>
        </p>
      </main>
    );
  }
  if (!scope) return <Loading what="the organization" />;
  const isAdmin = session.kind === 'admin';
  return (
    <OrgContext.Provider value={scope}>
      <OrgNav orgId={orgId} orgName={scope.org.name} isAdmin={isAdmin} />
      {streamState === 'reconnecting' && (
        <div class="banner banner-warning" role="alert">
          Connection lost — reconnecting…
        </div>
      )}
      {streamError ? <ErrorNote error={streamError} /> : null}
      <main id="main" class="page">
        {children}
      </main>
    </OrgContext.Provider>
  );
}

function OrgNav({ orgId, orgName, isAdmin }: { orgId: string; orgName: string; isAdmin: boolean }) {
  const path = useLocation();
  const items: [string, string][] = [
    ['Board', paths.board(orgId)],
    ['Devices', paths.devices(orgId)],
    ...(isAdmin
      ? ([
          ['Webhooks', paths.webhooks(orgId)],
          ['API keys', paths.apiKeys(orgId)],
          ['Drills', paths.drills(orgId)],
        ] as [string, string][])
      : []),
    ['Audit log', paths.audit(orgId)],
  ];
  return (
    <nav class="org-nav" aria-label={`${orgName} pages`}>
      <span class="org-name">{orgName}</span>
      <ul>
        {items.map(([label, href]) => (
          <li key={href}>
            <Link href={href} aria-current={path === href ? 'page' : undefined}>
              {label}
            </Link>
          </li>
        ))}
      </ul>
    </nav>
  );
}

function AdminOnly({ children }: { children: ComponentChildren }) {
  const session = useSession();
  if (session.kind !== 'admin') {
    return (
      <div class="note note-error" role="alert">
        Not allowed: this page needs an admin key (enk_adm_…). Sign in with one to manage webhooks, API keys and device tokens.
      </div>
    );
  }
  return <>{children}</>;
}

function Pages({ route }: { route: Route }) {
  switch (route.page) {
    case 'home':
      return (
        <main id="main" class="page">
          <OrganizationsPage />
        </main>
      );
    case 'board':
      return (
        <OrgLayout key={route.orgId} orgId={route.orgId} title="Board">
          <BoardPage />
        </OrgLayout>
      );
    case 'emergency':
      return (
        <OrgLayout key={route.orgId} orgId={route.orgId} title="Emergency">
          <EmergencyPage emergencyId={route.emergencyId} />
        </OrgLayout>
      );
    case 'devices':
      return (
        <OrgLayout key={route.orgId} orgId={route.orgId} title="Devices">
          <DevicesPage />
        </OrgLayout>
      );
    case 'webhooks':
      return (
        <OrgLayout key={route.orgId} orgId={route.orgId} title="Webhooks">
          <AdminOnly>
            <WebhooksPage />
          </AdminOnly>
        </OrgLayout>
      );
    case 'drills':
      return (
        <OrgLayout key={route.orgId} orgId={route.orgId} title="Drills">
          <AdminOnly>
            <DrillsPage />
          </AdminOnly>
        </OrgLayout>
      );
    case 'api-keys':
      return (
        <OrgLayout key={route.orgId} orgId={route.orgId} title="API keys">
          <AdminOnly>
            <ApiKeysPage />
          </AdminOnly>
        </OrgLayout>
      );
    case 'audit':
      return (
        <OrgLayout key={route.orgId} orgId={route.orgId} title="Audit log">
          <AuditPage />
        </OrgLayout>
      );
    default:
      return (
        <main id="main" class="page">
          <h1>Page not found</h1>
          <p>
            <Link href={paths.home()}>Go to the organizations</Link>
          </p>
        </main>
      );
  }
}

export function App() {
  const path = useLocation();
  const [key, setKey] = useState<string | null>(() => currentKey());
  /** The key as GET /me describes it, read at sign-in or, after a reload, when the page opens. */
  const [who, setWho] = useState<WhoAmI | null>(null);
  const [whoError, setWhoError] = useState<unknown>(null);
  const [whoAttempt, setWhoAttempt] = useState(0);
  const [displayName, setDisplayName] = useState<string | null>(() => currentName());
  const [naming, setNaming] = useState(false);
  const [message, setMessage] = useState<string | null>(null);
  const [offline, setOffline] = useState(typeof navigator !== 'undefined' && navigator.onLine === false);

  useEffect(() => {
    onUnauthorized((text) => {
      setKey(null);
      setWho(null);
      setDisplayName(null);
      setMessage(text);
    });
    const on = () => setOffline(false);
    const off = () => setOffline(true);
    window.addEventListener('online', on);
    window.addEventListener('offline', off);
    return () => {
      window.removeEventListener('online', on);
      window.removeEventListener('offline', off);
    };
  }, []);

  useEffect(() => {
    if (!key || who) return;
    let live = true;
    setWhoError(null);
    whoAmI().then(
      (w) => live && setWho(w),
      (err) => live && setWhoError(err),
    );
    return () => {
      live = false;
    };
  }, [key, who, whoAttempt]);

  const session = useMemo<Session | null>(
    () =>
      key && who
        ? {
            key,
            kind: keyKind(key),
            me: who.me,
            orgs: who.orgs,
            displayName,
            setDisplayName: (name: string) => {
              keepName(name);
              setDisplayName(name);
            },
            signOut: (text?: string) => {
              clearSession();
              setKey(null);
              setWho(null);
              setDisplayName(null);
              setMessage(text ?? null);
              navigate(paths.home());
            },
          }
        : null,
    [key, who, displayName],
  );

  const route = parse(path);
  let body: ComponentChildren;
  if (session) {
    body = (
      <SessionContext.Provider value={session}>
        <Pages route={route} />
      </SessionContext.Provider>
    );
  } else if (key) {
    body = (
      <main id="main" class="page">
        {whoError ? <ErrorNote error={whoError} onRetry={() => setWhoAttempt((n) => n + 1)} /> : <Loading what="your key" />}
      </main>
    );
  } else {
    body = (
      <main id="main" class="page narrow">
        <SignIn
          message={message}
          onSignedIn={(k, signedIn, name) => {
            setMessage(null);
            if (name) {
              keepName(name);
              setDisplayName(name);
            }
            setWho(signedIn);
            setKey(k);
            if (route.page === 'not-found') navigate(paths.home(), true);
          }}
        />
      </main>
    );
  }
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <Link href={paths.home()} class="brand">
          Emergency console
        </Link>
        {session && (
          <div class="who">
            <span class="key-kind" title={session.me.name}>
              {session.kind === 'admin' ? 'Admin key' : 'API key'} “{session.me.name}”
            </span>
            <AttentionControl />
            <span class="acting-as">{session.displayName ? `Acting as ${session.displayName}` : 'No name given'}</span>
            <button type="button" class="secondary small" onClick={() => setNaming(true)}>
              {session.displayName ? 'Change name' : 'Set your name'}
            </button>
            <button type="button" class="secondary small" onClick={() => session.signOut('Signed out.')}>
              Sign out
            </button>
          </div>
        )}
      </header>
      {session && naming && (
        <NameDialog
          current={session.displayName}
          onSave={(name) => {
            session.setDisplayName(name);
            setNaming(false);
          }}
          onClose={() => setNaming(false)}
        />
      )}
      {offline && (
        <div class="banner banner-warning" role="alert">
          You are offline — waiting for the network…
        </div>
      )}
      {body}
    </>
  );
}
