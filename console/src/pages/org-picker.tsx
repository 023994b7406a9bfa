import { useEffect, useId, useState } from 'preact/hooks';
import { allPages, pub, unwrap } from '../api';
import { useSession } from '../context';
import { ErrorNote, Link, Loading } from '../components';
import { paths } from '../router';
import type { Org } from '../types';

/** The organizations the key covers (GET /orgs), by name; picking one opens its board. */
export function OrgPicker() {
  const session = useSession();
  const [error, setError] = useState<unknown>(null);
  const [filter, setFilter] = useState('');
  const filterId = useId();

  useEffect(() => {
    if (session.orgs) return;
    allPages<Org>((cursor) => unwrap(pub().GET('/orgs', { params: { query: { cursor, limit: 200 } } }))).then(session.setOrgs, setError);
  }, [session]);

  if (error) return <ErrorNote error={error} onRetry={() => setError(null)} />;
  if (!session.orgs) return <Loading what="organizations" />;
  const needle = filter.trim().toLowerCase();
  const shown = session.orgs.filter((o) => !needle || `${o.name} ${o.enterpriseName} ${o.partnerName}`.toLowerCase().includes(needle));
  return (
    <section aria-labelledby="orgs-title">
      <h1 id="orgs-title">Organizations</h1>
      <p>Choose the organization to watch.</p>
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
          {shown.map((o) => (
            <li key={o.orgId}>
              <Link href={paths.board(o.orgId)} class="org-link">
                <span class="org-title">{o.name}</span>
                <span class="muted">
                  {o.enterpriseName} · {o.partnerName}
                </span>
              </Link>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
