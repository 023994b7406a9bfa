import { useEffect, useId, useState } from 'preact/hooks';
import { Link, Loading, Note, Time } from '../components';
import { useSession } from '../context';
import { useDocumentTitle } from '../document-title';
import { highestSeverity } from '../open-emergencies';
import { FOLLOWED, OrgOverview, type OrgSummary, overdueCount } from '../org-overview';
import { navigate, paths } from '../router';

/**
 * The landing page of a key that covers several organizations: each one with its open emergencies (count and
 * highest severity), overdue deliveries and offline base stations, kept current, and a link to its board.
 * A key of one org goes straight to that org's board.
 */
export function OrganizationsPage() {
  const session = useSession();
  const [filter, setFilter] = useState('');
  const filterId = useId();
  const only = session.orgs.length === 1 ? session.orgs[0] : null;
  const [summaries, setSummaries] = useState<OrgSummary[]>([]);

  useEffect(() => {
    if (only) {
      navigate(paths.board(only.orgId), true);
      return;
    }
    const overview = new OrgOverview(session.orgs, setSummaries);
    overview.start();
    return () => overview.stop();
  }, [only, session.orgs]);

  const totalOpen = summaries.reduce((n, s) => n + (s.open?.records.size ?? 0), 0);
  useDocumentTitle('Organizations', totalOpen);

  if (only) return <Loading what={only.name} />;
  const needle = filter.trim().toLowerCase();
  const byId = new Map(summaries.map((s) => [s.org.orgId, s]));
  const shown = session.orgs.filter((o) => !needle || `${o.name} ${o.enterpriseName} ${o.partnerName}`.toLowerCase().includes(needle));
  return (
    <section aria-labelledby="orgs-title">
      <div class="page-head">
        <h1 id="orgs-title">Organizations</h1>
        <p class="muted" aria-live="polite">
          {totalOpen} open across {session.orgs.length} organizations
        </p>
      </div>
      <p>Every organization this key covers, updated live. Open one for its board.</p>
      {session.orgs.length > FOLLOWED && (
        <Note>
          The first {FOLLOWED} organizations are followed live; the other {session.orgs.length - FOLLOWED} are read again in turn, a few each second (each says
          when).
        </Note>
      )}
      {session.orgs.length > 5 && (
        <div class="field">
          <label for={filterId}>Filter organizations</label>
          <input id={filterId} type="search" value={filter} onInput={(e) => setFilter((e.target as HTMLInputElement).value)} />
        </div>
      )}
      {session.orgs.length === 0 ? (
        <p>This key covers no organization yet.</p>
      ) : (
        <ul class="org-list" aria-label="Organizations">
          {shown.map((o) => {
            const summary = byId.get(o.orgId);
            return (
              <li key={o.orgId} class="org-card" aria-label={o.name} data-org-id={o.orgId}>
                <Link href={paths.board(o.orgId)} class="org-link">
                  <span class="org-title">{o.name}</span>
                  <span class="muted">
                    {o.enterpriseName} · {o.partnerName}
                  </span>
                </Link>
                {summary && <OrgFigures summary={summary} />}
              </li>
            );
          })}
        </ul>
      )}
      {session.me.orgsTotal > session.orgs.length && (
        <p class="muted">
          Showing {session.orgs.length} of {session.me.orgsTotal} organizations.
        </p>
      )}
    </section>
  );
}

/** A figure as it reads: … while loading, — when the key may not read it. */
function figure(value: number | null | undefined): string {
  return value === undefined ? '…' : value === null ? '—' : String(value);
}

function OrgFigures({ summary }: { summary: OrgSummary }) {
  const open = summary.open;
  const highest = open ? highestSeverity(open) : null;
  const overdue = summary.deliveries ? overdueCount(summary.deliveries) : summary.deliveries;
  return (
    <>
      <dl class="org-figures">
        <div class={open && open.records.size > 0 ? 'has-open' : undefined}>
          <dt>Open emergencies</dt>
          <dd>
            {figure(open === undefined ? undefined : open === null ? null : open.records.size)}
            {highest !== null && <span class={`severity sev-${Math.max(0, Math.min(5, highest))}`}>highest severity {highest}</span>}
          </dd>
        </div>
        <div class={overdue ? 'has-overdue' : undefined}>
          <dt>Overdue deliveries</dt>
          <dd>{figure(overdue)}</dd>
        </div>
        <div class={summary.offlineDevices ? 'has-offline' : undefined}>
          <dt>Offline base stations</dt>
          <dd>{figure(summary.offlineDevices)}</dd>
        </div>
      </dl>
      <p class="muted small following">
        {summary.following === 'live'
          ? 'Live'
          : summary.following === 'periodic'
            ? summary.readAt
              ? 'Read again in turn; last read '
              : 'Read again in turn'
            : summary.following === 'reconnecting'
              ? 'Connection lost — reconnecting…'
              : summary.following === 'stopped'
                ? 'Not followed live'
                : 'Connecting…'}
        {summary.following === 'periodic' && summary.readAt && <Time iso={summary.readAt.toISOString()} mode="relative" />}
        {summary.error && <span class="bad"> · {summary.error}</span>}
      </p>
    </>
  );
}
