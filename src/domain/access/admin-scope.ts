import { AppError } from '../../errors.js';
import type { AdminSubject, Caller } from './principal.js';

/** Where a resource sits in the tenancy: the partner, enterprise and org it belongs to (as far as it goes down). */
export interface Place {
  partnerId: string;
  enterpriseId?: string;
  orgId?: string;
  /** The 404 message of the id this place was looked up by (`No organization ...`), as that id was given. */
  unknown?: string;
}

/** The subject an operation is administered under: the operator at the CLI administers the whole instance. */
export function adminSubjectOf(caller: Caller): AdminSubject {
  const p = caller.principal;
  if (p.kind === 'operator') return { type: 'instance' };
  if (p.kind === 'admin_key') return p.subject;
  throw new AppError('unauthenticated', 'An admin key is required: Authorization: Bearer enk_adm_...');
}

/** Whether an admin subject reaches a place: instance reaches all, a partner its tree, an enterprise its orgs. */
export function subjectReaches(subject: AdminSubject, place: Place): boolean {
  if (subject.type === 'instance') return true;
  if (subject.type === 'partner') return place.partnerId === subject.id;
  return place.enterpriseId === subject.id;
}

/**
 * The single gate of the admin operations. Outside the caller's subject the answer is the 404 an unknown id gets
 * (`unknown`: that very message; by default the place's own), so that a key cannot tell another tenant's ids from
 * ids that name nothing. A resource found by its own id (a webhook, a key, a device) passes its own message.
 */
export function requireReach(caller: Caller, place: Place, unknown = place.unknown ?? 'No such resource.'): void {
  if (!subjectReaches(adminSubjectOf(caller), place)) throw new AppError('not_found', unknown);
}

/** Only keys of the whole instance may do this (e.g. create partners). */
export function requireInstance(caller: Caller): void {
  if (adminSubjectOf(caller).type !== 'instance') {
    throw new AppError('subject_not_covered', 'Only an admin key of the whole instance may do this.');
  }
}
