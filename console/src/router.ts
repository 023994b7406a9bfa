/** Client-side routes under /console (the service answers index.html for every one of them). */
import { useEffect, useState } from 'preact/hooks';

export const BASE = '/console';

export type Route =
  | { page: 'home' }
  | { page: 'board'; orgId: string }
  | { page: 'emergency'; orgId: string; emergencyId: string }
  | { page: 'devices'; orgId: string }
  | { page: 'webhooks'; orgId: string }
  | { page: 'api-keys'; orgId: string }
  | { page: 'audit'; orgId: string }
  | { page: 'drills'; orgId: string }
  | { page: 'not-found' };

export function parse(pathname: string): Route {
  const rest = pathname.startsWith(BASE) ? pathname.slice(BASE.length) : pathname;
  const parts = rest.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts.length === 0) return { page: 'home' };
  if (parts[0] !== 'orgs' || !parts[1]) return { page: 'not-found' };
  const orgId = parts[1];
  if (parts.length === 2) return { page: 'board', orgId };
  if (parts[2] === 'emergencies' && parts[3] && parts.length === 4) return { page: 'emergency', orgId, emergencyId: parts[3] };
  if (parts.length === 3 && (parts[2] === 'devices' || parts[2] === 'webhooks' || parts[2] === 'api-keys' || parts[2] === 'audit' || parts[2] === 'drills')) {
    return { page: parts[2], orgId };
  }
  return { page: 'not-found' };
}

export const paths = {
  home: () => `${BASE}/`,
  board: (orgId: string) => `${BASE}/orgs/${encodeURIComponent(orgId)}`,
  emergency: (orgId: string, id: string) => `${BASE}/orgs/${encodeURIComponent(orgId)}/emergencies/${encodeURIComponent(id)}`,
  devices: (orgId: string) => `${BASE}/orgs/${encodeURIComponent(orgId)}/devices`,
  webhooks: (orgId: string) => `${BASE}/orgs/${encodeURIComponent(orgId)}/webhooks`,
  apiKeys: (orgId: string) => `${BASE}/orgs/${encodeURIComponent(orgId)}/api-keys`,
  audit: (orgId: string) => `${BASE}/orgs/${encodeURIComponent(orgId)}/audit`,
  drills: (orgId: string) => `${BASE}/orgs/${encodeURIComponent(orgId)}/drills`,
};

const listeners = new Set<() => void>();

export function navigate(path: string, replace = false): void {
  if (path === location.pathname + location.search) return;
  if (replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  for (const l of listeners) l();
  window.scrollTo(0, 0);
}

export function useLocation(): string {
  const [path, setPath] = useState(location.pathname);
  useEffect(() => {
    const update = () => setPath(location.pathname);
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return path;
}

/** A link that navigates without reloading the page (a modified click opens a new tab as usual). */
export function onLinkClick(event: MouseEvent, href: string): void {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  event.preventDefault();
  navigate(href);
}
