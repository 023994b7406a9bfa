import { useEffect, useId, useMemo, useRef, useState } from 'preact/hooks';
import { allPages, pub, unwrap } from '../api';
import { useLiveEvents, useOrg } from '../context';
import { CategoryChip, ConfirmDialog, ErrorNote, ExerciseBadge, Link, Loading, Note, Severity, StatusBadge, Time } from '../components';
import {
  changedEmergency,
  type Deliveries,
  loadDeliveries,
  mergeDeliveries,
  NO_DELIVERIES,
  type OverdueDelivery,
  openOverdue,
  silentSummary,
  withDeliveryEvent,
} from '../deadlines';
import { paths } from '../router';
import { actorOf } from '../session';
import type { Category, Emergency, EmergencyStatus } from '../types';

type Filter = 'open' | 'all' | EmergencyStatus;

function matches(filter: Filter, e: Emergency): boolean {
  if (filter === 'all') return true;
  if (filter === 'open') return e.status !== 'resolved';
  return e.status === filter;
}

function newestFirst(a: Emergency, b: Emergency): number {
  return b.occurredAt.localeCompare(a.occurredAt) || b.createdAt.localeCompare(a.createdAt) || b.emergencyId.localeCompare(a.emergencyId);
}

/** The organization's emergencies, newest first, kept current by the live channel. */
export function BoardPage() {
  const { org, canWrite, generation, openCount: orgOpenCount } = useOrg();
  const [rows, setRows] = useState<Map<string, Emergency>>(new Map());
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<unknown>(null);
  const [filter, setFilter] = useState<Filter>('all');
  const [fresh, setFresh] = useState<Set<string>>(new Set());
  /** Emergencies changed by a live event since the list was asked for: the list must not put them back. */
  const touched = useRef(new Set<string>());
  const filterId = useId();
  const [deliveries, setDeliveries] = useState<Deliveries>(NO_DELIVERIES);
  const [deliveriesPartial, setDeliveriesPartial] = useState(false);
  const overdue = useMemo(() => openOverdue(deliveries), [deliveries]);

  async function loadPage(cursor: string | null) {
    const page = await unwrap(
      pub().GET('/orgs/{org_id}/emergencies', { params: { path: { org_id: org.orgId }, query: { limit: 50, cursor: cursor ?? undefined } } }),
    );
    setRows((current) => {
      const next = new Map(current);
      for (const e of page.items) if (!touched.current.has(e.emergencyId)) next.set(e.emergencyId, e);
      return next;
    });
    setNextCursor(page.nextCursor);
  }

  useEffect(() => {
    touched.current = new Set();
    setRows(new Map());
    setLoading(true);
    setError(null);
    loadPage(null)
      .catch(setError)
      .finally(() => setLoading(false));
  }, [org.orgId, generation]);

  // Overdue deliveries from the feed; the live channel's deadline events are merged into what it gives.
  useEffect(() => {
    const controller = new AbortController();
    setDeliveries(NO_DELIVERIES);
    setDeliveriesPartial(false);
    loadDeliveries(org.orgId, controller.signal).then(
      ({ deliveries: loaded, complete }) => {
        if (controller.signal.aborted) return;
        setDeliveries((live) => mergeDeliveries(loaded, live));
        setDeliveriesPartial(!complete);
      },
      (err) => !controller.signal.aborted && setError(err),
    );
    return () => controller.abort();
  }, [org.orgId, generation]);

  useLiveEvents((offset, event) => {
    setDeliveries((d) => withDeliveryEvent(d, offset, event));
    const record = changedEmergency(event);
    if (!record) return;
    touched.current.add(record.emergencyId);
    setRows((current) => new Map(current).set(record.emergencyId, record));
    if (event.eventType === 'emergency.declared') {
      setFresh((f) => new Set(f).add(record.emergencyId));
    }
  });

  const list = [...rows.values()].filter((e) => matches(filter, e)).sort(newestFirst);
  // The org's own count once read (it covers emergencies past the loaded pages), else the rows'.
  const openCount = orgOpenCount ?? [...rows.values()].filter((e) => e.status !== 'resolved').length;
  const overdueCount = overdue.size;

  return (
    <section aria-labelledby="board-title">
      <div class="page-head">
        <h1 id="board-title">Emergencies</h1>
        <p class="muted" aria-live="polite">
          {openCount} open
          {overdueCount > 0 && (
            <>
              {' · '}
              <strong class="overdue-text">{overdueCount} with delivery overdue</strong>
            </>
          )}
        </p>
      </div>
      {deliveriesPartial && (
        <Note kind="warning">Only the oldest deadline events were read: some overdue deliveries may not be marked. Open an emergency for its receipts.</Note>
      )}
      {canWrite ? (
        <DeclarePanel orgId={org.orgId} orgName={org.name} />
      ) : (
        <Note>This key can read only: declaring, re-categorizing and resolving need a key with the write permission.</Note>
      )}
      <div class="toolbar">
        <label for={filterId}>Show</label>
        <select id={filterId} value={filter} onChange={(e) => setFilter((e.target as HTMLSelectElement).value as Filter)}>
          <option value="all">All emergencies</option>
          <option value="open">Open (declared or categorized)</option>
          <option value="declared">Declared</option>
          <option value="categorized">Categorized</option>
          <option value="resolved">Resolved</option>
        </select>
      </div>
      <ErrorNote error={error} />
      {loading && rows.size === 0 ? (
        <Loading what="emergencies" />
      ) : list.length === 0 ? (
        <p>No emergencies{filter === 'all' ? '' : ' match this filter'}.</p>
      ) : (
        <table class="rows board" aria-label="Emergencies">
          <thead>
            <tr>
              <th scope="col">Status</th>
              <th scope="col">Category</th>
              <th scope="col">Severity</th>
              <th scope="col">Description</th>
              <th scope="col">Occurred</th>
            </tr>
          </thead>
          <tbody>
            {list.map((e) => (
              <tr
                key={e.emergencyId}
                class={`${fresh.has(e.emergencyId) ? 'fresh ' : ''}row-${e.status}${overdue.has(e.emergencyId) ? ' row-overdue' : ''}`}
                data-emergency-id={e.emergencyId}
              >
                <td data-label="Status">
                  <span class="status-cell">
                    <StatusBadge status={e.status} />
                    <ExerciseBadge exercise={e.exercise} />
                    <OverdueMark deliveries={overdue.get(e.emergencyId)} />
                  </span>
                </td>
                <td data-label="Category">
                  <CategoryChip category={e.category} />
                </td>
                <td data-label="Severity">
                  <Severity value={e.category.severity} />
                </td>
                <td data-label="Description">
                  <Link
                    href={paths.emergency(org.orgId, e.emergencyId)}
                    aria-label={`Open ${e.category.name} emergency: ${e.description || e.externalId || e.emergencyId}${overdue.has(e.emergencyId) ? ' (delivery overdue)' : ''}`}
                  >
                    {e.description || e.externalId || 'No description'}
                  </Link>
                </td>
                <td data-label="Occurred">
                  <Time iso={e.occurredAt} mode="relative" />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {nextCursor && (
        <button type="button" class="secondary" onClick={() => loadPage(nextCursor).catch(setError)}>
          Load older emergencies
        </button>
      )}
    </section>
  );
}

/** "Delivery overdue" on a row, in words (not only a colour), with how many base stations were silent. */
function OverdueMark({ deliveries }: { deliveries: OverdueDelivery[] | undefined }) {
  const latest = deliveries?.[deliveries.length - 1];
  if (!latest) return null;
  return (
    <span class="overdue-mark">
      <span class="badge overdue">Delivery overdue</span> <span class="muted small">{silentSummary(latest.data)}</span>
    </span>
  );
}

export function useCategories(orgId: string) {
  const [categories, setCategories] = useState<Category[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    allPages<Category>((cursor) =>
      unwrap(pub().GET('/orgs/{org_id}/emergencies/categories', { params: { path: { org_id: orgId }, query: { cursor, limit: 200 } } })),
    ).then(setCategories, setError);
  }, [orgId]);
  return { categories, error };
}

/** Declare: a short form, then a confirmation naming the category and the organization. */
function DeclarePanel({ orgId, orgName }: { orgId: string; orgName: string }) {
  const [open, setOpen] = useState(false);
  const { categories, error: categoriesError } = useCategories(orgId);
  const [categoryId, setCategoryId] = useState('');
  const [description, setDescription] = useState('');
  const [floor, setFloor] = useState('');
  const [exercise, setExercise] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState<Emergency | null>(null);
  const ids = { category: useId(), description: useId(), floor: useId(), exercise: useId() };

  const chosen = categories?.find((c) => c.categoryId === categoryId) ?? categories?.[0];

  async function declare(displayName: string | null) {
    setBusy(true);
    setError(null);
    try {
      const created = await unwrap(
        pub().POST('/orgs/{org_id}/emergencies', {
          params: { path: { org_id: orgId } },
          body: {
            categoryId: chosen?.categoryId,
            ...(description.trim() ? { description: description.trim() } : {}),
            ...(floor.trim() ? { location: { floorId: floor.trim() } } : {}),
            ...(displayName ? { declaredBy: actorOf(displayName) } : {}),
            ...(exercise ? { exercise: true } : {}),
          },
        }),
      );
      setDone(created);
      setConfirming(false);
      setOpen(false);
      setDescription('');
      setFloor('');
      setExercise(false);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <div class="declare">
      {done && (
        <Note kind="success">
          Declared: {done.category.name} emergency. <Link href={paths.emergency(done.orgId, done.emergencyId)}>Open it</Link>
        </Note>
      )}
      {!open ? (
        <button
          type="button"
          class="danger"
          onClick={() => {
            setOpen(true);
            setDone(null);
          }}
        >
          Declare emergency
        </button>
      ) : (
        <form
          class="card"
          aria-label="Declare an emergency"
          onSubmit={(e) => {
            e.preventDefault();
            setError(null);
            setConfirming(true);
          }}
        >
          <h2>Declare an emergency</h2>
          <ErrorNote error={categoriesError} />
          <div class="field">
            <label for={ids.category}>Category</label>
            <select id={ids.category} value={chosen?.categoryId ?? ''} onChange={(e) => setCategoryId((e.target as HTMLSelectElement).value)}>
              {(categories ?? []).map((c) => (
                <option key={c.categoryId} value={c.categoryId}>
                  {c.name} (severity {c.severity})
                </option>
              ))}
            </select>
          </div>
          <div class="field">
            <label for={ids.description}>Description</label>
            <textarea
              id={ids.description}
              rows={2}
              maxLength={4000}
              value={description}
              onInput={(e) => setDescription((e.target as HTMLTextAreaElement).value)}
            />
          </div>
          <div class="field">
            <label for={ids.floor}>Floor (optional)</label>
            <input id={ids.floor} maxLength={128} value={floor} onInput={(e) => setFloor((e.target as HTMLInputElement).value)} />
          </div>
          <div class="field checkbox">
            <input id={ids.exercise} type="checkbox" checked={exercise} onChange={(e) => setExercise((e.target as HTMLInputElement).checked)} />
            <label for={ids.exercise}>Exercise: a drill, shown as EXERCISE everywhere, never as a real alarm</label>
          </div>
          <div class="actions">
            <button type="button" class="secondary" onClick={() => setOpen(false)}>
              Cancel
            </button>
            <button type="submit" class="danger" disabled={!chosen}>
              Declare…
            </button>
          </div>
        </form>
      )}
      {confirming && chosen && (
        <ConfirmDialog
          title={exercise ? 'Declare this exercise?' : 'Declare this emergency?'}
          confirmLabel={exercise ? 'Declare the exercise now' : 'Declare now'}
          danger
          busy={busy}
          error={error}
          recordsPerson
          onConfirm={declare}
          onCancel={() => setConfirming(false)}
        >
          <p>
            {exercise && <ExerciseBadge exercise />} A <strong>{chosen.name}</strong> {exercise ? 'exercise' : 'emergency'} (severity {chosen.severity}) is
            declared for <strong>{orgName}</strong>. Every base station and webhook of the organization is alerted at once
            {exercise ? ', marked as an exercise.' : '.'}
          </p>
          {description.trim() && <p class="muted">“{description.trim()}”</p>}
        </ConfirmDialog>
      )}
    </div>
  );
}
