import { useEffect, useId, useState } from 'preact/hooks';
import { Link, Loading } from '../components';
import { useSession } from '../context';
import { navigate, paths } from '../router';

/** The organizations the key covers (from GET /me), by name; picking one opens its board. A key of one org goes straight there. */
export function OrgPicker() {
  const session = useSession();
  const [filter, setFilter] = useState('');
  const filterId = useId();
  const only = session.orgs.length === 1 ? session.orgs[0] : null;

  useEffect(() => {
    if (only) navigate(paths.board(only.orgId), true);
  }, [only]);

  if (only) return <Loading what={only.name} />;
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
      {session.me.orgsTotal > session.orgs.length && (
        <p class="muted">
          Showing {session.orgs.length} of {session.me.orgsTotal} organizations.
        </p>
      )}
    </section>
  );
}
