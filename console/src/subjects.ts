import type { Org, Subject } from './types';

/** Whether a subscription or key with this subject (and allowed orgs) covers the organization. */
export function covers(subject: Subject, allowedOrgIds: string[] | null, org: Org): boolean {
  const inTree =
    subject.type === 'instance' ||
    (subject.type === 'org' && subject.id === org.orgId) ||
    (subject.type === 'enterprise' && subject.id === org.enterpriseId) ||
    (subject.type === 'partner' && subject.id === org.partnerId);
  return inTree && (allowedOrgIds === null || allowedOrgIds.includes(org.orgId));
}

export function describeSubject(subject: Subject, org: Org): string {
  if (subject.type === 'org') return subject.id === org.orgId ? `this organization` : `organization ${subject.id}`;
  if (subject.type === 'enterprise') return subject.id === org.enterpriseId ? `enterprise ${org.enterpriseName}` : `enterprise ${subject.id}`;
  if (subject.type === 'partner') return subject.id === org.partnerId ? `partner ${org.partnerName}` : `partner ${subject.id}`;
  return 'the whole instance';
}
