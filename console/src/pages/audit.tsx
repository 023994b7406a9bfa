import { useId, useState } from 'preact/hooks';
import { pub, unwrap } from '../api';
import { useOrg } from '../context';
import { ErrorNote, Loading, Time, useLoad } from '../components';
import type { AuditEntry } from '../types';

const CATEGORIES = ['emergency', 'message', 'api_key', 'admin_key', 'webhook', 'device', 'category', 'user', 'org'];

interface Filters {
  eventCategory: string;
  eventType: string;
  actorId: string;
  since: string;
  until: string;
}

const EMPTY: Filters = { eventCategory: '', eventType: '', actorId: '', since: '', until: '' };

function toIso(local: string): string | undefined {
  return local ? new Date(local).toISOString() : undefined;
}

/** The organization's audit log, newest first, with the API's filters. */
export function AuditPage() {
  const { org } = useOrg();
  const [draft, setDraft] = useState<Filters>(EMPTY);
  const [applied, setApplied] = useState<Filters>(EMPTY);
  const [more, setMore] = useState<AuditEntry[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [moreError, setMoreError] = useState<unknown>(null);
  const ids = { category: useId(), type: useId(), actor: useId(), since: useId(), until: useId() };
  const path = { org_id: org.orgId };
  const query = (f: Filters, c?: string | null) => ({
    eventCategory: f.eventCategory || undefined,
    eventType: f.eventType.trim() || undefined,
    actorId: f.actorId.trim() || undefined,
    since: toIso(f.since),
    until: toIso(f.until),
    limit: 50,
    cursor: c ?? undefined,
  });
  const first = useLoad(
    async (signal) => {
      const page = await unwrap(pub().GET('/orgs/{org_id}/audit-logs', { params: { path, query: query(applied) }, signal }));
      setMore([]);
      setCursor(page.nextCursor);
      return page.items;
    },
    [org.orgId, JSON.stringify(applied)],
  );
  const set = (field: keyof Filters) => (e: Event) => setDraft({ ...draft, [field]: (e.target as HTMLInputElement).value });
  const entries = [...(first.data ?? []), ...more];

  return (
    <section aria-labelledby="audit-title">
      <h1 id="audit-title">Audit log</h1>
      <form
        class="filters card"
        aria-label="Audit log filters"
        onSubmit={(e) => {
          e.preventDefault();
          setApplied({ ...draft });
        }}
      >
        <div class="field">
          <label for={ids.category}>Category</label>
          <select id={ids.category} value={draft.eventCategory} onChange={set('eventCategory')}>
            <option value="">Any category</option>
            {CATEGORIES.map((c) => (
              <option key={c} value={c}>
                {c}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for={ids.type}>Event type</label>
          <input id={ids.type} placeholder="e.g. emergency.resolved" value={draft.eventType} onInput={set('eventType')} disabled={!draft.eventCategory} />
        </div>
        <div class="field">
          <label for={ids.actor}>Actor id</label>
          <input id={ids.actor} value={draft.actorId} onInput={set('actorId')} />
        </div>
        <div class="field">
          <label for={ids.since}>Since</label>
          <input id={ids.since} type="datetime-local" value={draft.since} onInput={set('since')} />
        </div>
        <div class="field">
          <label for={ids.until}>Until</label>
          <input id={ids.until} type="datetime-local" value={draft.until} onInput={set('until')} />
        </div>
        <div class="actions">
          <button
            type="button"
            class="secondary"
            onClick={() => {
              setDraft(EMPTY);
              setApplied(EMPTY);
            }}
          >
            Clear filters
          </button>
          <button type="submit" class="primary">
            Apply filters
          </button>
        </div>
      </form>
      <ErrorNote error={first.error} onRetry={first.reload} />
      {!first.data ? (
        first.error ? null : (
          <Loading what="the audit log" />
        )
      ) : entries.length === 0 ? (
        <p>No audit entries match.</p>
      ) : (
        <table class="rows" aria-label="Audit entries">
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Event</th>
              <th scope="col">Actor</th>
              <th scope="col">Resource</th>
            </tr>
          </thead>
          <tbody>
            {entries.map((a) => (
              <tr key={a.auditLogId}>
                <td data-label="When">
                  <Time iso={a.occurredAt} mode="absolute" />
                </td>
                <td data-label="Event">
                  <span class="mono">{a.eventType}</span>
                </td>
                <td data-label="Actor">
                  {a.actor.name ?? a.actor.id} <span class="muted small">({a.actor.type})</span>
                </td>
                <td data-label="Resource">
                  {a.resource.type} <span class="mono small">{a.resource.id}</span>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <ErrorNote error={moreError} />
      {cursor && (
        <button
          type="button"
          class="secondary"
          onClick={() =>
            unwrap(pub().GET('/orgs/{org_id}/audit-logs', { params: { path, query: query(applied, cursor) } })).then((page) => {
              setMore((m) => [...m, ...page.items]);
              setCursor(page.nextCursor);
            }, setMoreError)
          }
        >
          Load older entries
        </button>
      )}
    </section>
  );
}
