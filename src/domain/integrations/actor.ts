import type { Caller, IntegrationActor } from '../access/principal.js';

/** The caller with the integration named as the actor of what it does (the audit log's actor; the key stays the key). */
export function asIntegration(caller: Caller, integration: IntegrationActor): Caller {
  const { principal } = caller;
  if (principal.kind === 'operator') return caller;
  return { ...caller, principal: { ...principal, integration } };
}
