import type { Grant, Permission } from './permissions.js';

export type { Permission };
export type SubjectType = 'partner' | 'enterprise' | 'org';

/** What an admin key administers: the whole instance, or everything beneath one partner or enterprise. */
export type AdminSubject = { type: 'instance' } | { type: 'partner' | 'enterprise'; id: string };

/**
 * Who is calling: an API key (REST and MCP), an admin key (the admin API, and REST for the orgs
 * beneath its subject), or the operator at the admin CLI (the whole instance).
 */
export type Principal =
  | { kind: 'admin_key'; keyId: string; keyName: string; subject: AdminSubject; integration?: IntegrationActor }
  | {
      kind: 'api_key';
      keyId: string;
      keyName: string;
      subjectType: SubjectType;
      subjectId: string;
      allowedOrgIds: string[] | null;
      /** What the key was given, as stored. */
      grants: readonly Grant[];
      /** What those grants amount to. */
      permissions: ReadonlySet<Permission>;
      /** Set when the key's holder lent it to an OAuth client (the tool server's sign-in): the client acts with the key's reach. */
      oauth?: OAuthActor;
      /** Set when a monitoring integration acts: through the key (Alertmanager) or with a routing key of its own (PagerDuty). */
      integration?: IntegrationActor;
    }
  | { kind: 'operator'; name: string };

/** The caller an API key makes. */
export type ApiKeyPrincipal = Extract<Principal, { kind: 'api_key' }>;

/** An OAuth client acting through a grant a person approved with an API key. */
export interface OAuthActor {
  clientId: string;
  clientName: string | null;
  grantId: string;
  /** The resource (the /mcp URL) its tokens are bound to. */
  resource: string;
}

/** A monitoring system sending alerts in (extensions §12): the audit log names it as the actor. */
export interface IntegrationActor {
  kind: 'alertmanager' | 'pagerduty';
  /** The routing key's id (PagerDuty), or the receiver's name as Alertmanager sends it. */
  id: string;
  name: string;
}

/** The caller of one operation, with the request id that ties logs and audit entries together. */
export interface Caller {
  principal: Principal;
  requestId: string | null;
}

export const operatorCaller = (name = 'operator'): Caller => ({ principal: { kind: 'operator', name }, requestId: null });
