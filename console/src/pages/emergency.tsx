import { useEffect, useId, useMemo, useRef, useState } from 'preact/hooks';
import { allPages, ApiError, attachmentUrl, explain, newIdempotencyKey, pub, unwrap } from '../api';
import { useLiveEvents, useOrg, useSession } from '../context';
import {
  CategoryChip,
  ConfirmDialog,
  ErrorNote,
  ExerciseBadge,
  Link,
  Loading,
  NameField,
  Note,
  Severity,
  StatusBadge,
  Time,
  tidyName,
  useLoad,
} from '../components';
import {
  changedEmergency,
  COMPLETED,
  type CompletedDelivery,
  type Deliveries,
  deliveriesOf,
  duration,
  OVERDUE,
  type OverdueDelivery,
  silentSummary,
} from '../deadlines';
import { paths } from '../router';
import { actorOf } from '../session';
import type { Attachment, Emergency, EventEnvelope, FeedItem, Message, Receipts } from '../types';
import { useCategories } from './board';

const EVENT_LABEL: Record<string, string> = {
  'emergency.declared': 'Declared',
  'emergency.categorized': 'Re-categorized',
  'emergency.resolved': 'Resolved',
  [OVERDUE]: 'Delivery overdue',
  [COMPLETED]: 'Delivery completed',
  'drill.completed': 'Drill completed',
};

const label = (eventType: string) => EVENT_LABEL[eventType] ?? eventType;

/** One emergency: its record, timeline, messages and receipts; re-categorize and resolve for write keys. */
export function EmergencyPage({ emergencyId }: { emergencyId: string }) {
  const { org, canWrite } = useOrg();
  const base = `${org.orgId}/${emergencyId}`;
  const path = { org_id: org.orgId, emergency_id: emergencyId };
  const record = useLoad<Emergency>((signal) => unwrap(pub().GET('/orgs/{org_id}/emergencies/{emergency_id}', { params: { path }, signal })), [base]);
  const timeline = useLoad<FeedItem[]>(
    (signal) =>
      allPages(
        (cursor) => unwrap(pub().GET('/orgs/{org_id}/emergencies/{emergency_id}/events', { params: { path, query: { cursor, limit: 500 } }, signal })),
        2000,
      ) as Promise<FeedItem[]>,
    [base],
  );
  // How much of the receipts the operator opened: pages of events, and per event its extra pages of devices.
  const [paging, setPaging] = useState<ReceiptsPaging>({ base, eventPages: 1, devicePages: {} });
  const shown = paging.base === base ? paging : { base, eventPages: 1, devicePages: {} };
  const receipts = useLoad<Receipts>(
    (signal) => loadReceipts(path, shown.eventPages, shown.devicePages, signal),
    [base, shown.eventPages, JSON.stringify(shown.devicePages)],
  );
  const messages = useLoad<Message[]>(
    (signal) =>
      allPages(
        (cursor) => unwrap(pub().GET('/orgs/{org_id}/emergencies/{emergency_id}/messages', { params: { path, query: { cursor, limit: 200 } }, signal })),
        500,
      ),
    [base],
  );

  useLiveEvents((_offset, event) => {
    if (event.emergencyId !== emergencyId) return;
    const updated = changedEmergency(event);
    if (updated) record.set(updated);
    timeline.reload();
    receipts.reload();
  });
  // The emergency's overdue deliveries and completions, from its timeline (reloaded on each of its events).
  const deliveries = useMemo(() => (timeline.data ? deliveriesOf(timeline.data) : null), [timeline.data]);
  const overdueOpen = deliveries ? [...deliveries.overdue.keys()].some((watched) => !deliveries.completed.has(watched)) : false;

  // Acknowledgements arrive without an event: receipts are asked for again every few seconds.
  useEffect(() => {
    const timer = setInterval(() => receipts.reload(), 5000);
    return () => clearInterval(timer);
  }, [receipts.reload]);

  if (record.error && !record.data) {
    return (
      <>
        <p>
          <Link href={paths.board(org.orgId)}>← Back to the board</Link>
        </p>
        <ErrorNote error={record.error} onRetry={record.reload} />
      </>
    );
  }
  const e = record.data;
  if (!e) return <Loading what="the emergency" />;
  return (
    <article aria-labelledby="emergency-title">
      <p>
        <Link href={paths.board(org.orgId)}>← Back to the board</Link>
      </p>
      <div class="page-head">
        <h1 id="emergency-title">
          {e.category.name} emergency <StatusBadge status={e.status} /> <ExerciseBadge exercise={e.exercise} />
          {overdueOpen && <span class="badge overdue">Delivery overdue</span>}
        </h1>
      </div>
      <section class="card" aria-label="Record">
        <dl class="record">
          <dt>Category</dt>
          <dd>
            <CategoryChip category={e.category} />
          </dd>
          <dt>Severity</dt>
          <dd>
            <Severity value={e.category.severity} />
          </dd>
          <dt>Description</dt>
          <dd>{e.description || <span class="muted">—</span>}</dd>
          <dt>Occurred</dt>
          <dd>
            <Time iso={e.occurredAt} />
          </dd>
          <dt>Declared by</dt>
          <dd>{e.declaredBy?.name ?? '—'}</dd>
          {e.externalId && (
            <>
              <dt>External id</dt>
              <dd>{e.externalId}</dd>
            </>
          )}
          {e.source && (
            <>
              <dt>Source</dt>
              <dd>{e.source}</dd>
            </>
          )}
          {e.location && (
            <>
              <dt>Location</dt>
              <dd>
                {[e.location.floorId && `Floor ${e.location.floorId}`, e.location.latitude !== null && `${e.location.latitude}, ${e.location.longitude}`]
                  .filter(Boolean)
                  .join(' · ') || '—'}
              </dd>
            </>
          )}
          {e.status === 'resolved' && (
            <>
              <dt>Resolved</dt>
              <dd>
                <Time iso={e.resolvedAt} /> by {e.resolvedBy?.name ?? '—'}
              </dd>
              <dt>Resolution note</dt>
              <dd>{e.resolutionNote || <span class="muted">—</span>}</dd>
            </>
          )}
          <dt>Emergency id</dt>
          <dd class="mono">{e.emergencyId}</dd>
        </dl>
      </section>
      {!canWrite && e.status !== 'resolved' && <Note>This key can read only: re-categorizing and resolving need the write permission.</Note>}
      {canWrite && e.status !== 'resolved' && <Actions emergency={e} onChanged={record.set} />}
      {deliveries && deliveries.overdue.size > 0 && <DeliverySection deliveries={deliveries} />}

      <div class="columns">
        <section aria-labelledby="timeline-title">
          <h2 id="timeline-title">Timeline</h2>
          <ErrorNote error={timeline.error} />
          {!timeline.data ? (
            <Loading what="the timeline" />
          ) : (
            <ol class="timeline" aria-label="Timeline">
              {timeline.data.map((item) => (
                <li key={item.event.eventId}>
                  <span class="event-type">{label(item.event.eventType)}</span> <TimelineDetail event={item.event} />
                  <span class="muted">
                    {' '}
                    · <Time iso={item.event.createdAt} /> · offset {item.offset}
                  </span>
                </li>
              ))}
            </ol>
          )}
        </section>
        <ReceiptsSection
          receipts={receipts.data}
          error={receipts.error}
          onRefresh={receipts.reload}
          onMoreEvents={() => setPaging({ ...shown, eventPages: shown.eventPages + 1 })}
          onMoreDevices={(eventId) => setPaging({ ...shown, devicePages: { ...shown.devicePages, [eventId]: (shown.devicePages[eventId] ?? 0) + 1 } })}
        />
      </div>
      <MessagesSection
        messages={messages.data}
        error={messages.error}
        emergency={e}
        canWrite={canWrite}
        onPosted={(m) => messages.set([...(messages.data ?? []).filter((x) => x.messageId !== m.messageId), m])}
      />
    </article>
  );
}

function Actions({ emergency, onChanged }: { emergency: Emergency; onChanged: (e: Emergency) => void }) {
  const { categories } = useCategories(emergency.orgId);
  const path = { org_id: emergency.orgId, emergency_id: emergency.emergencyId };
  const [categoryId, setCategoryId] = useState('');
  const [note, setNote] = useState('');
  const [confirm, setConfirm] = useState<'recategorize' | 'resolve' | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState<string | null>(null);
  const ids = { category: useId(), note: useId() };
  const others = (categories ?? []).filter((c) => c.categoryId !== emergency.category.id);
  const target = others.find((c) => c.categoryId === categoryId) ?? others[0];

  async function run(displayName: string | null) {
    setBusy(true);
    setError(null);
    try {
      if (confirm === 'recategorize' && target) {
        onChanged(await unwrap(pub().PATCH('/orgs/{org_id}/emergencies/{emergency_id}', { params: { path }, body: { categoryId: target.categoryId } })));
        setDone(`Re-categorized as ${target.name}.`);
      } else if (confirm === 'resolve') {
        const body = {
          ...(note.trim() ? { resolutionNote: note.trim() } : {}),
          ...(displayName ? { resolvedBy: actorOf(displayName) } : {}),
        };
        onChanged(await unwrap(pub().POST('/orgs/{org_id}/emergencies/{emergency_id}/resolutions', { params: { path }, body })));
        setDone('Resolved.');
      }
      setConfirm(null);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <section class="card actions-card" aria-labelledby="actions-title">
      <h2 id="actions-title">Actions</h2>
      {done && <Note kind="success">{done}</Note>}
      <div class="action-forms">
        <form
          aria-label="Re-categorize"
          onSubmit={(e) => {
            e.preventDefault();
            setError(null);
            setConfirm('recategorize');
          }}
        >
          <div class="field">
            <label for={ids.category}>New category</label>
            <select id={ids.category} value={target?.categoryId ?? ''} onChange={(e) => setCategoryId((e.target as HTMLSelectElement).value)}>
              {others.map((c) => (
                <option key={c.categoryId} value={c.categoryId}>
                  {c.name} (severity {c.severity})
                </option>
              ))}
            </select>
          </div>
          <button type="submit" class="secondary" disabled={!target}>
            Re-categorize…
          </button>
        </form>
        <form
          aria-label="Resolve"
          onSubmit={(e) => {
            e.preventDefault();
            setError(null);
            setConfirm('resolve');
          }}
        >
          <div class="field">
            <label for={ids.note}>Resolution note</label>
            <textarea id={ids.note} rows={2} maxLength={4000} value={note} onInput={(e) => setNote((e.target as HTMLTextAreaElement).value)} />
          </div>
          <button type="submit" class="primary">
            Resolve…
          </button>
        </form>
      </div>
      {confirm === 'recategorize' && target && (
        <ConfirmDialog
          title="Re-categorize this emergency?"
          confirmLabel="Re-categorize now"
          busy={busy}
          error={error}
          onConfirm={run}
          onCancel={() => setConfirm(null)}
        >
          <p>
            The emergency moves from <strong>{emergency.category.name}</strong> to <strong>{target.name}</strong> (severity {target.severity}). Base stations
            and webhooks are told at once.
          </p>
        </ConfirmDialog>
      )}
      {confirm === 'resolve' && (
        <ConfirmDialog
          title="Resolve this emergency?"
          confirmLabel="Resolve now"
          busy={busy}
          error={error}
          recordsPerson
          onConfirm={run}
          onCancel={() => setConfirm(null)}
        >
          <p>
            The <strong>{emergency.category.name}</strong> emergency is closed for good: a resolved emergency cannot change again.
          </p>
        </ConfirmDialog>
      )}
    </section>
  );
}

/** What a timeline entry adds to its type: the category after a transition, the counts of a deadline event. */
function TimelineDetail({ event }: { event: EventEnvelope }) {
  if (event.eventType === OVERDUE) {
    return (
      <span class="overdue-text">
        {silentSummary(event.data)} · {label(event.data.eventType)} (offset {event.data.eventOffset})
      </span>
    );
  }
  if (event.eventType === COMPLETED) {
    return (
      <span>
        all {event.data.targeted} acknowledged {label(event.data.eventType)} (offset {event.data.eventOffset}), {duration(event.data.completedAfterMs)} after
        the overdue
      </span>
    );
  }
  if (event.eventType === 'drill.completed') {
    const d = event.data;
    return (
      <span class={d.passed ? undefined : 'overdue-text'}>
        {d.passed ? 'passed' : 'failed'}: {d.acknowledged} of {d.targeted} acknowledged
        {d.ackMs.p95 === null ? '' : `, p95 ${d.ackMs.p95} ms`}
        {d.silentDevicesTotal > 0 ? `, ${d.silentDevicesTotal} silent` : ''}
      </span>
    );
  }
  const emergency = changedEmergency(event);
  return emergency ? <CategoryChip category={emergency.category} /> : null;
}

/**
 * The events of this emergency that base stations did not acknowledge by their deadline: the silent stations
 * the overdue event named (as they were at the deadline) until a completion follows, then when it came.
 */
function DeliverySection({ deliveries }: { deliveries: Deliveries }) {
  const entries = [...deliveries.overdue.entries()].sort(([a], [b]) => a - b);
  return (
    <section class="card delivery" aria-labelledby="delivery-title">
      <h2 id="delivery-title">Delivery</h2>
      {entries.map(([watched, overdue]) => (
        <OverdueEntry key={watched} overdue={overdue} completed={deliveries.completed.get(watched)} />
      ))}
    </section>
  );
}

function OverdueEntry({ overdue, completed }: { overdue: OverdueDelivery; completed: CompletedDelivery | undefined }) {
  const d = overdue.data;
  const watched = `${label(d.eventType)} (offset ${d.eventOffset})`;
  const more = d.silentDevicesTotal - d.silentDevices.length;
  if (completed) {
    return (
      <section class="delivery-entry" aria-label={`Delivery of ${watched}`}>
        <h3>
          <span class="badge ok-badge">Delivery completed</span> {watched}
        </h3>
        <p>
          All {completed.data.targeted} base stations acknowledged it, {duration(completed.data.completedAfterMs)} after it was overdue ({d.silentDevicesTotal}{' '}
          had been silent at the {d.deadlineSeconds} s deadline).
        </p>
      </section>
    );
  }
  return (
    <section class="delivery-entry" aria-label={`Delivery of ${watched}`}>
      <h3>
        <span class="badge overdue">Delivery overdue</span> {watched}
      </h3>
      <p>
        {silentSummary(d)} at the {d.deadlineSeconds} s deadline (<Time iso={overdue.createdAt} mode="relative" />
        ). As they were then:
      </p>
      <ul class="devices-list" aria-label="Silent base stations">
        {d.silentDevices.map((s) => (
          <li key={s.deviceId}>
            <span class={`dot ${s.online ? 'warn' : 'off'}`} aria-hidden="true" /> <strong>{s.name}</strong>{' '}
            <span class="muted">
              · {s.online ? 'online' : 'offline'} · last seen {s.lastSeenAt ? <Time iso={s.lastSeenAt} mode="relative" /> : 'never'}
            </span>
          </li>
        ))}
      </ul>
      {more > 0 && <p class="muted">and {more} more not listed: the receipts below page through every pending base station.</p>}
    </section>
  );
}

interface ReceiptsPaging {
  base: string;
  eventPages: number;
  /** Per event id, how many pages of devices beyond the first ten were asked for. */
  devicePages: Record<string, number>;
}

/** Events per page of receipts, and devices per further page of one event. */
const RECEIPT_EVENTS = 20;
const RECEIPT_DEVICES = 100;

/**
 * The receipts as the view shows them: the first `eventPages` pages of events, each event's devices
 * extended by the pages of devices asked for, so a periodic reload refreshes everything on screen.
 */
async function loadReceipts(
  path: { org_id: string; emergency_id: string },
  eventPages: number,
  devicePages: Record<string, number>,
  signal: AbortSignal,
): Promise<Receipts> {
  const get = (query: { limit: number; cursor?: string; deviceCursor?: string }) =>
    unwrap(pub().GET('/orgs/{org_id}/emergencies/{emergency_id}/receipts', { params: { path, query: { detail: 'devices', ...query } }, signal }));
  let receipts = await get({ limit: RECEIPT_EVENTS });
  for (let page = 1; page < eventPages && receipts.nextCursor; page++) {
    const next = await get({ limit: RECEIPT_EVENTS, cursor: receipts.nextCursor });
    receipts = { ...next, events: [...receipts.events, ...next.events] };
  }
  const events = await Promise.all(
    receipts.events.map(async (event) => {
      let devices = event.devices;
      for (let page = 0; page < (devicePages[event.eventId] ?? 0) && devices.nextCursor; page++) {
        const next = (await get({ limit: RECEIPT_DEVICES, deviceCursor: devices.nextCursor })).events[0]?.devices;
        if (!next) break;
        devices = {
          ...next,
          pending: [...devices.pending, ...next.pending],
          acknowledgedBy: [...(devices.acknowledgedBy ?? []), ...(next.acknowledgedBy ?? [])],
        };
      }
      return { ...event, devices };
    }),
  );
  return { ...receipts, events };
}

function ReceiptsSection({
  receipts,
  error,
  onRefresh,
  onMoreEvents,
  onMoreDevices,
}: {
  receipts: Receipts | null;
  error: unknown;
  onRefresh: () => void;
  onMoreEvents: () => void;
  onMoreDevices: (eventId: string) => void;
}) {
  return (
    <section aria-labelledby="receipts-title">
      <div class="section-head">
        <h2 id="receipts-title">Receipts</h2>
        <button type="button" class="secondary small" onClick={onRefresh}>
          Refresh receipts
        </button>
      </div>
      <ErrorNote error={error} />
      {!receipts ? (
        <Loading what="receipts" />
      ) : (
        <>
          {receipts.events.map((r) => {
            const name = `${label(r.eventType)} (offset ${r.offset})`;
            const acknowledgedBy = r.devices.acknowledgedBy ?? [];
            return (
              <section class="receipt" key={r.eventId} aria-label={`Receipts of ${name}`}>
                <h3>
                  {label(r.eventType)} <span class="muted">· offset {r.offset}</span>
                </h3>
                {r.deadlineAt && (
                  <p class="deadline">
                    Deadline <Time iso={r.deadlineAt} mode="absolute" />
                    {r.overdue && (
                      <>
                        {' · '}
                        <span class="badge overdue">Overdue</span>
                        {r.devices.acknowledged === r.devices.targeted && <span class="muted"> (acknowledged by all since)</span>}
                      </>
                    )}
                  </p>
                )}
                <p class="counts">
                  {r.devices.targeted === 0 ? (
                    <span class="muted">No base stations targeted</span>
                  ) : (
                    <span class={r.devices.acknowledged === r.devices.targeted ? 'ok' : 'warn'}>
                      {r.devices.acknowledged} of {r.devices.targeted} base stations acknowledged
                    </span>
                  )}
                  {' · '}
                  <span>
                    Webhooks: {r.webhooks.succeeded} delivered, {r.webhooks.failed} failed, {r.webhooks.pending} pending (of {r.webhooks.targeted})
                  </span>
                </p>
                {r.devices.pending.length > 0 && (
                  <>
                    <h4>
                      Pending{' '}
                      <span class="muted">
                        · {r.devices.pending.length} of {r.devices.targeted - r.devices.acknowledged} shown
                      </span>
                    </h4>
                    <ul class="devices-list" aria-label="Pending devices">
                      {r.devices.pending.map((d) => (
                        <li key={d.deviceId}>
                          <span class="dot warn" aria-hidden="true" /> {d.name}{' '}
                          <span class="muted">
                            · {d.online ? 'online' : 'offline'}, acknowledged up to {d.ackedOffset}
                          </span>
                        </li>
                      ))}
                    </ul>
                  </>
                )}
                {acknowledgedBy.length > 0 && (
                  <>
                    <h4>
                      Acknowledged{' '}
                      <span class="muted">
                        · {acknowledgedBy.length} of {r.devices.acknowledged} shown
                      </span>
                    </h4>
                    <ul class="devices-list" aria-label="Acknowledged devices">
                      {acknowledgedBy.map((d) => (
                        <li key={d.deviceId}>
                          <span class="dot ok" aria-hidden="true" /> {d.name}{' '}
                          <span class="muted">· {d.acknowledgedAt ? <Time iso={d.acknowledgedAt} mode="relative" /> : '—'}</span>
                        </li>
                      ))}
                    </ul>
                  </>
                )}
                {r.devices.nextCursor && (
                  <button type="button" class="secondary small" aria-label={`Show more devices of ${name}`} onClick={() => onMoreDevices(r.eventId)}>
                    Show more devices
                  </button>
                )}
              </section>
            );
          })}
          {receipts.nextCursor && (
            <button type="button" class="secondary" onClick={onMoreEvents}>
              Show more events
            </button>
          )}
        </>
      )}
    </section>
  );
}

function Thumbnail({ emergency, attachment }: { emergency: Emergency; attachment: Attachment }) {
  const [src, setSrc] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    const controller = new AbortController();
    let url: string | null = null;
    attachmentUrl(emergency.orgId, emergency.emergencyId, attachment.attachmentId, controller.signal).then(
      (u) => {
        url = u;
        setSrc(u);
      },
      (err) => !controller.signal.aborted && setError(err),
    );
    return () => {
      controller.abort();
      if (url) URL.revokeObjectURL(url);
    };
  }, [emergency.orgId, emergency.emergencyId, attachment.attachmentId]);
  const alt = attachment.caption || 'Image attachment';
  if (error) return <span class="muted">{error instanceof ApiError ? explain(error) : 'The image could not be loaded.'}</span>;
  if (!src) return <span class="thumb placeholder" role="img" aria-label={`Loading ${alt}`} />;
  return (
    <a href={src} target="_blank" rel="noopener" aria-label={`Open ${alt} full size`}>
      <img class="thumb" src={src} alt={alt} width={attachment.width ?? undefined} height={attachment.height ?? undefined} />
    </a>
  );
}

function StoredFile({ emergency, attachment }: { emergency: Emergency; attachment: Attachment }) {
  const [error, setError] = useState<unknown>(null);
  const label = attachment.caption || `${attachment.kind} (${attachment.mimeType ?? 'file'})`;
  return (
    <>
      <button
        type="button"
        class="link"
        onClick={() =>
          attachmentUrl(emergency.orgId, emergency.emergencyId, attachment.attachmentId).then((u) => window.open(u, '_blank', 'noopener'), setError)
        }
      >
        Open {label}
      </button>
      {error ? <span class="muted"> {explain(error)}</span> : null}
    </>
  );
}

function AttachmentView({ emergency, attachment }: { emergency: Emergency; attachment: Attachment }) {
  if (attachment.source === 'url' && attachment.url) {
    return (
      <a href={attachment.url} target="_blank" rel="noopener noreferrer">
        {attachment.caption || attachment.url} <span class="muted">({attachment.kind.replace('_', ' ')} link)</span>
      </a>
    );
  }
  if (attachment.kind === 'image') return <Thumbnail emergency={emergency} attachment={attachment} />;
  return <StoredFile emergency={emergency} attachment={attachment} />;
}

function MessagesSection({
  messages,
  error,
  emergency,
  canWrite,
  onPosted,
}: {
  messages: Message[] | null;
  error: unknown;
  emergency: Emergency;
  canWrite: boolean;
  onPosted: (message: Message) => void;
}) {
  return (
    <section aria-labelledby="messages-title">
      <h2 id="messages-title">Messages</h2>
      <ErrorNote error={error} />
      {!messages ? (
        error ? null : (
          <Loading what="messages" />
        )
      ) : messages.length === 0 ? (
        <p class="muted">No messages.</p>
      ) : (
        <ol class="messages" aria-label="Messages">
          {messages.map((m) => (
            <li key={m.messageId} class="message">
              <div class="muted small">
                {m.source ?? 'unknown'} · <Time iso={m.createdAt} mode="relative" />
              </div>
              {m.content && <p>{m.content}</p>}
              {m.attachments.length > 0 && (
                <ul class="attachments">
                  {m.attachments.map((a) => (
                    <li key={a.attachmentId}>
                      <AttachmentView emergency={emergency} attachment={a} />
                      {a.caption && a.kind === 'image' && a.source !== 'url' && <span class="caption">{a.caption}</span>}
                    </li>
                  ))}
                </ul>
              )}
            </li>
          ))}
        </ol>
      )}
      {canWrite && <MessageComposer emergency={emergency} onPosted={onPosted} />}
    </section>
  );
}

/**
 * Posts a text message into the emergency's conversation as the operator (author type `user`, their
 * display name). The Idempotency-Key stays the same while the text does, so posting again after a lost
 * answer never posts twice.
 */
function MessageComposer({ emergency, onPosted }: { emergency: Emergency; onPosted: (message: Message) => void }) {
  const session = useSession();
  const [text, setText] = useState('');
  const [name, setName] = useState('');
  const [nameError, setNameError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const attempt = useRef<{ content: string; key: string } | null>(null);
  const textId = useId();
  const errorId = useId();

  async function post(event: Event) {
    event.preventDefault();
    setError(null);
    setNameError(null);
    const content = text.trim();
    if (!content) {
      setError('Write a message first.');
      return;
    }
    let author = session.displayName;
    if (!author) {
      author = tidyName(name);
      if (!author) {
        setNameError('Enter your name: it is recorded with the message.');
        return;
      }
      session.setDisplayName(author);
    }
    if (attempt.current?.content !== content) attempt.current = { content, key: newIdempotencyKey() };
    setBusy(true);
    try {
      const posted = await unwrap(
        pub().POST('/orgs/{org_id}/emergencies/{emergency_id}/messages', {
          params: { path: { org_id: emergency.orgId, emergency_id: emergency.emergencyId }, header: { 'idempotency-key': attempt.current.key } },
          body: { content, author: { type: 'user', name: author } },
        }),
      );
      attempt.current = null;
      setText('');
      onPosted(posted);
    } catch (err) {
      setError(`Message not posted: ${explain(err)}`);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form class="card composer" aria-label="Post a message" onSubmit={post} noValidate>
      <div class="field">
        <label for={textId}>New message</label>
        <textarea
          id={textId}
          rows={2}
          maxLength={4000}
          value={text}
          onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
          aria-describedby={error ? errorId : undefined}
          aria-invalid={error ? 'true' : undefined}
        />
      </div>
      {!session.displayName && <NameField value={name} onInput={setName} error={nameError} />}
      {error && (
        <p id={errorId} class="note note-error" role="alert">
          {error}
        </p>
      )}
      <div class="actions">
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Posting…' : 'Post message'}
        </button>
      </div>
    </form>
  );
}
