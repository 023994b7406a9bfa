import { useId, useState } from 'preact/hooks';
import { admin, allPages, unwrap } from '../api';
import { useOrg } from '../context';
import { ConfirmDialog, ErrorNote, Loading, Note, Time, useLoad } from '../components';
import { covers, describeSubject } from '../subjects';
import type { Delivery, Page, Webhook } from '../types';

/** The webhook subscriptions that reach this organization: health, recent attempts, test and replay. */
export function WebhooksPage() {
  const { org } = useOrg();
  const hooks = useLoad(
    async (signal) =>
      (await allPages<Webhook>((cursor) => unwrap(admin().GET('/webhooks', { params: { query: { cursor, limit: 200 } }, signal })))).filter((w) =>
        covers(w.subject, w.allowedOrgIds, org),
      ),
    [org.orgId],
  );
  return (
    <section aria-labelledby="webhooks-title">
      <div class="page-head">
        <h1 id="webhooks-title">Webhooks</h1>
        <button type="button" class="secondary small" onClick={hooks.reload}>
          Refresh webhooks
        </button>
      </div>
      <p class="muted">Subscriptions whose subject covers {org.name}.</p>
      <ErrorNote error={hooks.error} onRetry={hooks.reload} />
      {!hooks.data ? (
        hooks.error ? null : (
          <Loading what="webhooks" />
        )
      ) : hooks.data.length === 0 ? (
        <p>No webhook subscription reaches this organization.</p>
      ) : (
        hooks.data.map((w) => <WebhookCard key={w.webhookId} webhook={w} />)
      )}
    </section>
  );
}

function health(deliveries: Delivery[] | null): { label: string; tone: 'ok' | 'warn' | 'bad' | 'muted' } {
  if (!deliveries) return { label: 'Checking…', tone: 'muted' };
  if (deliveries.length === 0) return { label: 'No deliveries yet', tone: 'muted' };
  const latest = deliveries[0];
  if (latest.status === 'delivered') return { label: 'Healthy: the latest delivery succeeded', tone: 'ok' };
  if (latest.status === 'failed') return { label: 'Failing: the latest delivery failed', tone: 'bad' };
  return { label: 'Retrying: the latest delivery is pending', tone: 'warn' };
}

/** The error of a delivery's latest attempt (attempts come oldest first), when that attempt failed with one. */
function latestError(delivery: Delivery | undefined): string | null {
  return delivery?.attempts[delivery.attempts.length - 1]?.error ?? null;
}

function WebhookCard({ webhook }: { webhook: Webhook }) {
  const { org } = useOrg();
  const path = { id: webhook.webhookId };
  const deliveries = useLoad<Page<Delivery>>(
    (signal) => unwrap(admin().GET('/webhooks/{id}/deliveries', { params: { path, query: { limit: 10 } }, signal })),
    [webhook.webhookId],
  );
  const [testResult, setTestResult] = useState<string | null>(null);
  const [testing, setTesting] = useState(false);
  const [since, setSince] = useState(() => toLocalInput(new Date(Date.now() - 3600_000)));
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [replayed, setReplayed] = useState<string | null>(null);
  const sinceId = useId();
  const titleId = useId();
  const h = health(deliveries.data?.items ?? null);
  const latest = deliveries.data?.items[0];
  const latestAttemptError = latestError(latest);

  async function test() {
    setTesting(true);
    setTestResult(null);
    setError(null);
    try {
      const r = await unwrap(admin().POST('/webhooks/{id}/test', { params: { path } }));
      setTestResult(
        r.outcome === 'succeeded'
          ? `Test delivered: HTTP ${r.status} in ${Math.round(r.latencyMs)} ms.`
          : `Test failed: ${r.status ? `HTTP ${r.status}` : (r.error ?? 'no answer')} after ${Math.round(r.latencyMs)} ms.`,
      );
    } catch (err) {
      setError(err);
    } finally {
      setTesting(false);
    }
  }

  async function replay() {
    setBusy(true);
    setError(null);
    try {
      const r = await unwrap(admin().POST('/webhooks/{id}/replay', { params: { path }, body: { since: new Date(since).toISOString() } }));
      setReplayed(`Replayed ${r.replayed} event${r.replayed === 1 ? '' : 's'}.`);
      setConfirming(false);
      deliveries.reload();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <article class="card webhook" aria-labelledby={titleId}>
      <h2 id={titleId} class="mono url">
        {webhook.url}
      </h2>
      <p>
        <span class={`badge ${webhook.status === 'active' ? 'status-declared-ok' : 'status-resolved'}`}>
          {webhook.status === 'active' ? 'Active' : 'Disabled'}
        </span>{' '}
        <span class={`health ${h.tone}`}>{h.label}</span>
      </p>
      {latest && latestAttemptError && (
        <p class="note note-warning attempt-error">
          <span>
            Latest attempt ({latest.eventType}): <span class="mono">{latestAttemptError}</span>
          </span>
        </p>
      )}
      <p class="muted small">
        Subject: {describeSubject(webhook.subject, org)} · Events: {webhook.eventTypes?.join(', ') ?? 'all'}
        {webhook.disabledReason ? ` · Disabled: ${webhook.disabledReason}` : ''}
      </p>
      <div class="row-actions">
        <button type="button" class="secondary" onClick={test} disabled={testing} aria-label={`Send a test event to ${webhook.url}`}>
          {testing ? 'Sending…' : 'Send test event'}
        </button>
      </div>
      {testResult && <Note kind={testResult.startsWith('Test delivered') ? 'success' : 'warning'}>{testResult}</Note>}
      <form
        class="inline-form"
        aria-label={`Replay deliveries to ${webhook.url}`}
        onSubmit={(e) => {
          e.preventDefault();
          setError(null);
          setConfirming(true);
        }}
      >
        <div class="field">
          <label for={sinceId}>Replay events since</label>
          <input id={sinceId} type="datetime-local" step={1} value={since} onInput={(e) => setSince((e.target as HTMLInputElement).value)} required />
        </div>
        <button type="submit" class="secondary">
          Replay…
        </button>
      </form>
      {replayed && <Note kind="success">{replayed}</Note>}
      {!confirming && <ErrorNote error={error} />}
      <h3>Recent deliveries</h3>
      <ErrorNote error={deliveries.error} />
      {deliveries.data &&
        (deliveries.data.items.length === 0 ? (
          <p class="muted">None yet.</p>
        ) : (
          <table class="rows" aria-label={`Recent deliveries to ${webhook.url}`}>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Outcome</th>
                <th scope="col">Attempts</th>
              </tr>
            </thead>
            <tbody>
              {deliveries.data.items.map((d) => (
                <tr key={d.deliveryId}>
                  <td data-label="Event">{d.eventType}</td>
                  <td data-label="Outcome">
                    <span class={d.status === 'delivered' ? 'ok' : d.status === 'failed' ? 'bad' : 'warn'}>{d.status}</span>
                    {latestError(d) && <div class="small muted">{latestError(d)}</div>}
                  </td>
                  <td data-label="Attempts">
                    {d.attempts.length === 0 ? (
                      <span class="muted">not attempted yet</span>
                    ) : (
                      <ul class="attempts">
                        {d.attempts.map((a) => (
                          <li key={a.at}>
                            <Time iso={a.at} mode="relative" /> —{' '}
                            {a.responseStatus ? `HTTP ${a.responseStatus}${a.error ? `: ${a.error}` : ''}` : (a.error ?? 'no answer')},{' '}
                            {Math.round(a.latencyMs)} ms
                          </li>
                        ))}
                      </ul>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ))}
      {confirming && (
        <ConfirmDialog title="Replay deliveries?" confirmLabel="Replay now" busy={busy} error={error} onConfirm={replay} onCancel={() => setConfirming(false)}>
          <p>
            Every event since {new Date(since).toLocaleString('en-GB')} is delivered again to <span class="mono">{webhook.url}</span>. The receiver should
            deduplicate by eventId.
          </p>
        </ConfirmDialog>
      )}
    </article>
  );
}

function toLocalInput(date: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}
