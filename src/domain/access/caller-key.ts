import type { Caller } from './principal.js';

/** What a caller's share of a limited resource is counted by: its API or admin key, or the operator at the CLI. */
export function callerKey(caller: Caller): string {
  const { principal } = caller;
  return principal.kind === 'operator' ? `operator:${principal.name}` : `${principal.kind}:${principal.keyId}`;
}
