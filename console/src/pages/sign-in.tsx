import { useId, useState } from 'preact/hooks';
import { ApiError, explain, type WhoAmI, whoAmI } from '../api';
import { NameField, tidyName } from '../components';
import { keepKey } from '../session';

/**
 * Sign-in with an admin key or an API key; the key is checked (GET /me) before it is kept for this tab.
 * The operator's name may be given here, or is asked at the first write that records it.
 */
export function SignIn({ message, onSignedIn }: { message: string | null; onSignedIn: (key: string, who: WhoAmI, name: string | null) => void }) {
  const [key, setKey] = useState('');
  const [name, setName] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const inputId = useId();
  const hintId = useId();
  const errorId = useId();

  async function submit(event: Event) {
    event.preventDefault();
    const candidate = key.trim();
    if (!candidate) {
      setError('Enter an API key or an admin key.');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const who = await whoAmI(candidate, { keepSessionOn401: true });
      keepKey(candidate);
      onSignedIn(candidate, who, tidyName(name) || null);
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) setError('That key was not accepted: it is unknown, expired or revoked. Check it and try again.');
      else if (err instanceof ApiError && err.status === 429) setError(`Too many attempts: ${err.message}`);
      else setError(explain(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <section class="card sign-in" aria-labelledby="sign-in-title">
      <h1 id="sign-in-title">Sign in</h1>
      <p>Sign in with an admin key (enk_adm_…) or an organization's API key (enk_live_…).</p>
      {message && (
        <div class="note note-warning" role="status">
          {message}
        </div>
      )}
      <form onSubmit={submit} noValidate>
        <label for={inputId}>API key</label>
        <input
          id={inputId}
          name="key"
          type="password"
          autoComplete="off"
          spellcheck={false}
          value={key}
          onInput={(e) => setKey((e.target as HTMLInputElement).value)}
          aria-describedby={error ? `${hintId} ${errorId}` : hintId}
          aria-invalid={error ? 'true' : undefined}
          required
        />
        <p id={hintId} class="hint">
          Kept in this browser tab only (sessionStorage); closing the tab signs you out.
        </p>
        <NameField value={name} onInput={setName} optional />
        {error && (
          <p id={errorId} class="note note-error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </section>
  );
}
