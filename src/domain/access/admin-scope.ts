import { AppError } from '../../errors.js';
import type { AdminSubject, Caller } from './principal.js';

/** Where a resource sits in the tenancy: the partner, enterprise and org it belongs to (as far as it goes down). */
export interface Place {
  partnerId: string;
  enterpriseId?: string;
  orgId?: string;
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

/** The single gate of the admin operations: 403 subject_not_covered outside the caller's subject. */
export function requireReach(caller: Caller, place: Place): void {
  if (!subjectReaches(adminSubjectOf(caller), place)) {
    throw new AppError('subject_not_covered', 'This admin key does not cover the requested resource.');
  }
}

/** Only keys of the whole instance may do this (e.g. create partners). */
export function requireInstance(caller: Caller): void {
  if (adminSubjectOf(caller).type !== 'instance') {
    throw new AppError('subject_not_covered', 'Only an admin key of the whole instance may do this.');
  }
}
