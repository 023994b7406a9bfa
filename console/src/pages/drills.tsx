import { useState } from 'preact/hooks';
import { admin, allPages, unwrap } from '../api';
import { ErrorNote, Loading, Time, useLoad } from '../components';
import { useOrg } from '../context';
import type { Drill, DrillRun } from '../types';

/** Runs shown per drill: enough to see a trend. */
const RUNS_SHOWN = 5;

/** The organization's drills: their schedule and next run, their last runs' results, and a button to run one now. */
export function DrillsPage() {
  const { org } = useOrg();
  const drills = useLoad(
    async (signal) =>
      allPages<Drill>((cursor) =>
        unwrap(admin().GET('/orgs/{org_id}/drills', { params: { path: { org_id: org.orgId }, query: { cursor, limit: 200 } }, signal })),
      ),
    [org.orgId],
  );
  return (
    <section aria-labelledby="drills-title">
      <div class="page-head">
        <h1 id="drills-title">Drills</h1>
        <button type="button" class="secondary small" onClick={drills.reload}>
          Refresh drills
        </button>
      </div>
      <p class="muted">
        Exercises that alert {org.name}'s base stations as an EXERCISE and measure who acknowledges. Create and schedule them with the admin API or{' '}
        <code>admin drill create</code> (docs/drills.md).
      </p>
      <ErrorNote error={drills.error} onRetry={drills.reload} />
      {!drills.data ? (
        drills.error ? null : (
          <Loading what="drills" />
        )
      ) : drills.data.length === 0 ? (
        <p>No drill yet.</p>
      ) : (
        drills.data.map((d) => <DrillCard key={d.drillId} drill={d} />)
      )}
    </section>
  );
}

function DrillCard({ drill }: { drill: Drill }) {
  const { org } = useOrg();
  const path = { org_id: org.orgId, drill_id: drill.drillId };
  const runs = useLoad(
    (signal) => unwrap(admin().GET('/orgs/{org_id}/drills/{drill_id}/runs', { params: { path, query: { limit: RUNS_SHOWN } }, signal })),
    [drill.drillId],
  );
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const titleId = `drill-${drill.drillId}`;

  async function runNow() {
    setBusy(true);
    setError(null);
    try {
      await unwrap(admin().POST('/orgs/{org_id}/drills/{drill_id}/runs', { params: { path } }));
      runs.reload();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <article class="card" aria-labelledby={titleId}>
      <div class="page-head">
        <h2 id={titleId}>{drill.name}</h2>
        <div>
          <button type="button" class="secondary small" onClick={runs.reload}>
            Refresh runs
          </button>{' '}
          <button type="button" class="small" onClick={runNow} disabled={busy}>
            {busy ? 'Starting…' : 'Run now'}
          </button>
        </div>
      </div>
      <dl class="facts">
        <dt>Schedule</dt>
        <dd>{drill.schedule ? <code>{drill.schedule}</code> : 'On demand only'}</dd>
        <dt>Next run</dt>
        <dd>{drill.nextRunAt ? <Time iso={drill.nextRunAt} /> : 'None scheduled'}</dd>
        <dt>Deadline</dt>
        <dd>
          {drill.ackDeadlineSeconds} s to acknowledge, resolved after {drill.resolveAfterSeconds} s
        </dd>
      </dl>
      <ErrorNote error={error} />
      <ErrorNote error={runs.error} onRetry={runs.reload} />
      {!runs.data ? (
        runs.error ? null : (
          <Loading what="runs" />
        )
      ) : runs.data.items.length === 0 ? (
        <p class="muted">Not run yet.</p>
      ) : (
        <RunTable runs={runs.data.items} caption={`Last runs of ${drill.name}`} />
      )}
    </article>
  );
}

function result(run: DrillRun): string {
  if (run.status !== 'completed') return run.status === 'starting' ? 'Starting' : 'Running';
  return run.passed ? 'Passed' : 'Failed';
}

function RunTable({ runs, caption }: { runs: DrillRun[]; caption: string }) {
  return (
    <table>
      <caption class="visually-hidden">{caption}</caption>
      <thead>
        <tr>
          <th scope="col">Started</th>
          <th scope="col">Result</th>
          <th scope="col">Acknowledged</th>
          <th scope="col">p95</th>
          <th scope="col">Silent</th>
        </tr>
      </thead>
      <tbody>
        {runs.map((run) => (
          <tr key={run.runId} data-run-status={run.status}>
            <td>{run.startedAt ? <Time iso={run.startedAt} /> : <Time iso={run.scheduledFor} />}</td>
            <td>
              <span class={`badge ${run.status !== 'completed' ? 'status-categorized' : run.passed ? 'ok-badge' : 'overdue'}`}>{result(run)}</span>
            </td>
            <td>
              {run.acknowledged}/{run.targeted}
            </td>
            <td>{run.ackMs.p95 === null ? '–' : `${run.ackMs.p95} ms`}</td>
            <td title={run.silentDevices.map((d) => d.name).join(', ')}>{run.silentDevicesTotal}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
