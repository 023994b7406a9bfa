import type { IdempotencyScope } from '../../db/idempotency.js';
export type Permission = 'read' | 'write';
export type SubjectType = 'partner' | 'enterprise' | 'org';

/** Who is calling: an API key (REST and MCP) or the operator at the admin CLI. */
export type Principal =
  | {
      kind: 'api_key';
      keyId: string;
      keyName: string;
      subjectType: SubjectType;
      subjectId: string;
      allowedOrgIds: string[] | null;
      permissions: ReadonlySet<string>;
    }
  | { kind: 'operator'; name: string };

/** The caller of one operation, with the request id that ties logs and audit entries together. */
export interface Caller {
  principal: Principal;
  requestId: string | null;
  /** The request's Idempotency-Key, handed to the unit of work that writes (REST writes only). */
  idempotency?: IdempotencyScope;
}

export const operatorCaller = (name = 'operator'): Caller => ({ principal: { kind: 'operator', name }, requestId: null });
