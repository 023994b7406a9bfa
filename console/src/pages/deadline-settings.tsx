import { useId, useState } from 'preact/hooks';
import { admin, allPages, pub, unwrap } from '../api';
import { ErrorNote, Loading, Note, useLoad } from '../components';
import { deadlineText } from '../deadlines';
import type { Category } from '../types';

const MIN_SECONDS = 5;
const MAX_SECONDS = 3600;

/** The seconds typed, or why they cannot be a deadline. */
function parseSeconds(text: string): { seconds: number } | { problem: string } {
  const value = Number(text.trim());
  if (!text.trim() || !Number.isInteger(value) || value < MIN_SECONDS || value > MAX_SECONDS) {
    return { problem: `Enter a whole number of seconds from ${MIN_SECONDS} to ${MAX_SECONDS}.` };
  }
  return { seconds: value };
}

/**
 * The organization's acknowledgement deadline and its categories' overrides (admin keys): how long base stations
 * have to acknowledge an emergency event before an emergency.delivery_overdue names the silent ones.
 */
export function DeadlineSettings({ orgId }: { orgId: string }) {
  const record = useLoad((signal) => unwrap(admin().GET('/orgs/{org_id}', { params: { path: { org_id: orgId } }, signal })), [orgId]);
  const list = useLoad<Category[]>(
    (signal) =>
      allPages((cursor) =>
        unwrap(pub().GET('/orgs/{org_id}/emergencies/categories', { params: { path: { org_id: orgId }, query: { cursor, limit: 200 } }, signal })),
      ),
    [orgId],
  );
  const titleId = useId();
  const org = record.data;
  const categories = list.data;
  const error = record.error ?? list.error;

  const orgSeconds = org?.ackDeadlineSeconds ?? null;
  // Uncategorized is the system's own category and cannot be changed.
  const editable = (categories ?? []).filter((c) => !c.isSystem);
  const overriding = editable.filter((c) => c.ackDeadlineSeconds !== null).length;

  return (
    <section class="card deadline-settings" aria-labelledby={titleId}>
      <h2 id={titleId}>Acknowledgement deadline</h2>
      <p class="muted">
        A base station that has not acknowledged an emergency event (declared, re-categorized, resolved) this long after it was written is named in an{' '}
        <code>emergency.delivery_overdue</code> event, and the emergency is marked on the board; half-way, the event is sent to it again. It applies to events
        written after the change.
      </p>
      <ErrorNote error={error} />
      {!org ? (
        error ? null : (
          <Loading what="the deadline" />
        )
      ) : (
        <DeadlineForm
          subject="the organization"
          current={orgSeconds}
          currentText={deadlineText(orgSeconds)}
          clearLabel="Turn off"
          clearedText="Saved: no deadline."
          save={async (seconds) => {
            const updated = await unwrap(admin().PATCH('/orgs/{org_id}', { params: { path: { org_id: orgId } }, body: { ackDeadlineSeconds: seconds } }));
            record.set(updated);
            return updated.ackDeadlineSeconds;
          }}
        />
      )}
      {org && categories && editable.length > 0 && (
        <details class="category-deadlines">
          <summary>Per category ({overriding === 0 ? 'all use the organization’s' : `${overriding} with a deadline of their own`})</summary>
          <table class="rows" aria-label="Acknowledgement deadline per category">
            <thead>
              <tr>
                <th scope="col">Category</th>
                <th scope="col">Deadline</th>
              </tr>
            </thead>
            <tbody>
              {editable.map((c) => (
                <tr key={c.categoryId}>
                  <td data-label="Category">
                    <span class="category">
                      <span class="swatch" style={{ background: c.color }} aria-hidden="true" />
                      <span>{c.name}</span>
                    </span>
                  </td>
                  <td data-label="Deadline">
                    <DeadlineForm
                      subject={c.name}
                      current={c.ackDeadlineSeconds}
                      currentText={c.ackDeadlineSeconds === null ? `The organization’s (${deadlineText(orgSeconds)})` : deadlineText(c.ackDeadlineSeconds)}
                      clearLabel="Use the organization’s"
                      clearedText="Saved: the organization’s deadline applies."
                      save={async (seconds) => {
                        const updated = await unwrap(
                          admin().PATCH('/orgs/{org_id}/categories/{category_id}', {
                            params: { path: { org_id: orgId, category_id: c.categoryId } },
                            body: { ackDeadlineSeconds: seconds },
                          }),
                        );
                        list.set((categories ?? []).map((x) => (x.categoryId === c.categoryId ? { ...x, ackDeadlineSeconds: updated.ackDeadlineSeconds } : x)));
                        return updated.ackDeadlineSeconds;
                      }}
                    />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </details>
      )}
    </section>
  );
}

/** The current deadline of the organization or a category, a field to change it, and a button to clear it. */
function DeadlineForm(props: {
  subject: string;
  current: number | null;
  currentText: string;
  clearLabel: string;
  clearedText: string;
  save: (seconds: number | null) => Promise<number | null>;
}) {
  const [text, setText] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [saved, setSaved] = useState<string | null>(null);
  const inputId = useId();
  const problemId = useId();

  async function save(seconds: number | null) {
    setBusy(true);
    setError(null);
    setSaved(null);
    try {
      const now = await props.save(seconds);
      setText('');
      setSaved(now === null ? props.clearedText : `Saved: ${deadlineText(now)}.`);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form
      class="deadline-form"
      aria-label={`Acknowledgement deadline of ${props.subject}`}
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        const parsed = parseSeconds(text);
        if ('problem' in parsed) {
          setProblem(parsed.problem);
          return;
        }
        setProblem(null);
        void save(parsed.seconds);
      }}
    >
      <p class="current">
        Now: <strong>{props.currentText}</strong>
      </p>
      <div class="field">
        <label for={inputId}>
          {props.subject === 'the organization' ? 'New deadline in seconds (5 to 3600)' : `New deadline of ${props.subject} in seconds`}
        </label>
        <input
          id={inputId}
          type="number"
          inputMode="numeric"
          min={MIN_SECONDS}
          max={MAX_SECONDS}
          step={1}
          value={text}
          onInput={(e) => setText((e.target as HTMLInputElement).value)}
          aria-invalid={problem ? 'true' : undefined}
          aria-describedby={problem ? problemId : undefined}
        />
      </div>
      <button type="submit" class="primary small" disabled={busy}>
        Save
      </button>
      {props.current !== null && (
        <button type="button" class="secondary small" disabled={busy} onClick={() => save(null)}>
          {props.clearLabel}
        </button>
      )}
      {problem && (
        <p id={problemId} class="note note-error" role="alert">
          {problem}
        </p>
      )}
      <ErrorNote error={error} />
      {saved && <Note kind="success">{saved}</Note>}
    </form>
  );
}
