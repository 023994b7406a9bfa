import { createContext } from 'preact';
import { useContext, useEffect, useRef } from 'preact/hooks';
import type { KeyKind } from './session';
import type { StreamState } from './stream';
import type { EventEnvelope, Me, Org } from './types';

/** What every page reads of the signed-in session and the chosen organization. */
export interface Session {
  key: string;
  kind: KeyKind;
  /** The key as GET /me describes it: its name, permissions and subject. */
  me: Me;
  /** Every organization the key covers, by name. */
  orgs: Org[];
  /** The operator's display name for this tab, recorded on declares, resolutions and messages; null until given. */
  displayName: string | null;
  setDisplayName(name: string): void;
  signOut(message?: string): void;
}

export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error('no session');
  return session;
}

export type Listener = (offset: number, event: EventEnvelope) => void;

export interface OrgScope {
  org: Org;
  /** From the key's permissions (GET /me); admin keys always write. */
  canWrite: boolean;
  streamState: StreamState;
  /** The org's open emergencies (declared or categorized), kept live; null until read or when the key may not list them. */
  openCount: number | null;
  /** Bumped when the live channel had to start over (events past retention): pages load again. */
  generation: number;
  subscribe(listener: Listener): () => void;
}

export const OrgContext = createContext<OrgScope | null>(null);

export function useOrg(): OrgScope {
  const scope = useContext(OrgContext);
  if (!scope) throw new Error('no organization');
  return scope;
}

/** Subscribes to the org's live events for the life of the calling component. */
export function useLiveEvents(listener: Listener): void {
  const { subscribe } = useOrg();
  const ref = useRef(listener);
  ref.current = listener;
  useEffect(() => subscribe((offset, event) => ref.current(offset, event)), [subscribe]);
}
