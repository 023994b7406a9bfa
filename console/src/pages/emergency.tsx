import { useEffect, useId, useState } from 'preact/hooks';
import { allPages, ApiError, attachmentUrl, explain, pub, unwrap } from '../api';
import { useLiveEvents, useOrg } from '../context';
import { CategoryChip, ConfirmDialog, ErrorNote, Link, Loading, Note, Severity, StatusBadge, Time, useLoad } from '../components';
import { paths } from '../router';
import type { Attachment, Emergency, FeedItem, Message, Receipts } from '../types';
import { useCategories } from './board';

const EVENT_LABEL: Record<string, string> = {
  'emergency.declared': 'Declared',
  'emergency.categorized': 'Re-categorized',
  'emergency.resolved': 'Resolved',
};

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
    const updated = event.data?.emergency;
    if (updated) record.set(updated);
    timeline.reload();
    receipts.reload();
  });

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
          {e.category.name} emergency <StatusBadge status={e.status} />
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
      {canWrite === false && e.status !== 'resolved' && <Note>This key can read only: re-categorizing and resolving need the write permission.</Note>}
      {canWrite !== false && e.status !== 'resolved' && <Actions emergency={e} onChanged={record.set} />}

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
                  <span class="event-type">{EVENT_LABEL[item.event.eventType] ?? item.event.eventType}</span>{' '}
                  {item.event.data?.emergency && <CategoryChip category={item.event.data.emergency.category} />}
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
      <MessagesSection messages={messages.data} error={messages.error} emergency={e} />
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

  async function run() {
    setBusy(true);
    setError(null);
    try {
      if (confirm === 'recategorize' && target) {
        onChanged(await unwrap(pub().PATCH('/orgs/{org_id}/emergencies/{emergency_id}', { params: { path }, body: { categoryId: target.categoryId } })));
        setDone(`Re-categorized as ${target.name}.`);
      } else if (confirm === 'resolve') {
        const body = note.trim() ? { resolutionNote: note.trim() } : {};
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
        <ConfirmDialog title="Resolve this emergency?" confirmLabel="Resolve now" busy={busy} error={error} onConfirm={run} onCancel={() => setConfirm(null)}>
          <p>
            The <strong>{emergency.category.name}</strong> emergency is closed for good: a resolved emergency cannot change again.
          </p>
        </ConfirmDialog>
      )}
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
            const label = `${EVENT_LABEL[r.eventType] ?? r.eventType} (offset ${r.offset})`;
            const acknowledgedBy = r.devices.acknowledgedBy ?? [];
            return (
              <section class="receipt" key={r.eventId} aria-label={`Receipts of ${label}`}>
                <h3>
                  {EVENT_LABEL[r.eventType] ?? r.eventType} <span class="muted">· offset {r.offset}</span>
                </h3>
                <p class="counts">
                  <span class={r.devices.acknowledged === r.devices.targeted ? 'ok' : 'warn'}>
                    {r.devices.acknowledged} of {r.devices.targeted} base stations acknowledged
                  </span>
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
                  <button type="button" class="secondary small" aria-label={`Show more devices of ${label}`} onClick={() => onMoreDevices(r.eventId)}>
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

function MessagesSection({ messages, error, emergency }: { messages: Message[] | null; error: unknown; emergency: Emergency }) {
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
    </section>
  );
}
