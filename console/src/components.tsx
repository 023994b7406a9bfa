import type { ComponentChildren } from 'preact';
import { useCallback, useContext, useEffect, useId, useRef, useState } from 'preact/hooks';
import { explain } from './api';
import { SessionContext } from './context';
import { onLinkClick } from './router';
import { MAX_NAME } from './session';
import type { Emergency, EmergencyStatus } from './types';

export function Link(props: { href: string; children: ComponentChildren; class?: string; 'aria-label'?: string; 'aria-current'?: 'page' | undefined }) {
  const { href, children, ...rest } = props;
  return (
    <a href={href} onClick={(e) => onLinkClick(e, href)} {...rest}>
      {children}
    </a>
  );
}

/** A failure shown where it happened: 403 as "Not allowed", a lost network as such, else the service's message. */
export function ErrorNote({ error, onRetry }: { error: unknown; onRetry?: () => void }) {
  if (!error) return null;
  return (
    <div class="note note-error" role="alert">
      <span>{explain(error)}</span>
      {onRetry && (
        <button type="button" class="secondary" onClick={onRetry}>
          Try again
        </button>
      )}
    </div>
  );
}

export function Note({ children, kind = 'info' }: { children: ComponentChildren; kind?: 'info' | 'success' | 'warning' }) {
  return (
    <div class={`note note-${kind}`} role="status">
      {children}
    </div>
  );
}

const STATUS_LABEL: Record<EmergencyStatus, string> = { declared: 'Declared', categorized: 'Categorized', resolved: 'Resolved' };

export function StatusBadge({ status }: { status: EmergencyStatus }) {
  return <span class={`badge status-${status}`}>{STATUS_LABEL[status] ?? status}</span>;
}

/** EXERCISE, in words, on every exercise (a drill): never to be taken for a real alarm. */
export function ExerciseBadge({ exercise }: { exercise: boolean | undefined }) {
  return exercise ? (
    <span class="badge exercise" title="An exercise (a drill), not a real alarm">
      EXERCISE
    </span>
  ) : null;
}

export function CategoryChip({ category }: { category: Emergency['category'] }) {
  return (
    <span class="category">
      <span class="swatch" style={{ background: category.color }} aria-hidden="true" />
      <span>{category.name}</span>
    </span>
  );
}

export function Severity({ value }: { value: number }) {
  return (
    <span class={`severity sev-${Math.max(0, Math.min(5, value))}`} title={`Severity ${value} of 5`}>
      <span class="visually-hidden">Severity </span>
      {value}
    </span>
  );
}

const rtf = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });

export function relative(iso: string, now = Date.now()): string {
  const seconds = Math.round((new Date(iso).getTime() - now) / 1000);
  const abs = Math.abs(seconds);
  if (abs < 45) return rtf.format(seconds, 'second');
  if (abs < 45 * 60) return rtf.format(Math.round(seconds / 60), 'minute');
  if (abs < 22 * 3600) return rtf.format(Math.round(seconds / 3600), 'hour');
  return rtf.format(Math.round(seconds / 86400), 'day');
}

export function absolute(iso: string): string {
  return new Date(iso).toLocaleString('en-GB', { dateStyle: 'medium', timeStyle: 'medium' });
}

export function Time({ iso, mode = 'both' }: { iso: string | null | undefined; mode?: 'both' | 'absolute' | 'relative' }) {
  if (!iso) return <span class="muted">—</span>;
  const text = mode === 'absolute' ? absolute(iso) : mode === 'relative' ? relative(iso) : `${absolute(iso)} (${relative(iso)})`;
  return (
    <time dateTime={iso} title={iso}>
      {text}
    </time>
  );
}

/**
 * The operator's display name, as a form field: asked once per tab, at sign-in or at the first write
 * that records a person, and kept in sessionStorage.
 */
export function NameField({ value, onInput, error, optional }: { value: string; onInput: (v: string) => void; error?: string | null; optional?: boolean }) {
  const id = useId();
  const hintId = useId();
  const errorId = useId();
  return (
    <div class="field">
      <label for={id}>{optional ? 'Your name (optional)' : 'Your name'}</label>
      <input
        id={id}
        name="display-name"
        autoComplete="name"
        maxLength={MAX_NAME}
        value={value}
        onInput={(e) => onInput((e.target as HTMLInputElement).value)}
        aria-describedby={error ? `${hintId} ${errorId}` : hintId}
        aria-invalid={error ? 'true' : undefined}
        required={!optional}
      />
      <p id={hintId} class="hint">
        Recorded as the person who declares, resolves or writes; asked once for this tab.
      </p>
      {error && (
        <p id={errorId} class="note note-error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}

/** A name as typed, made tidy: trimmed, inner runs of spaces made one. */
export function tidyName(value: string): string {
  return value.trim().replace(/\s+/g, ' ');
}

/**
 * A modal `<dialog>`, open while it is mounted (focus moves into it and the page behind is inert); Escape calls `onCancel`
 * instead of closing it behind the app's back. `alert` makes it an alertdialog described by that element.
 */
export function ModalDialog(props: { titleId: string; alert?: { describedBy: string }; onCancel: () => void; children: ComponentChildren }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (dialog && !dialog.open) dialog.showModal();
    return () => dialog?.close();
  }, []);
  return (
    <dialog
      ref={ref}
      {...(props.alert ? { role: 'alertdialog', 'aria-describedby': props.alert.describedBy } : {})}
      aria-modal="true"
      aria-labelledby={props.titleId}
      onCancel={(e) => {
        e.preventDefault();
        props.onCancel();
      }}
    >
      {props.children}
    </dialog>
  );
}

/**
 * A confirmation before a write: a modal alertdialog naming what will happen, with the action's own
 * verb on the confirm button. Escape or Cancel closes it without acting. With `recordsPerson`, the
 * write names the operator: when no display name is known yet the dialog asks for it, keeps it for the
 * tab and hands it to `onConfirm`.
 */
export function ConfirmDialog(props: {
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  danger?: boolean;
  busy?: boolean;
  error?: unknown;
  recordsPerson?: boolean;
  onConfirm: (displayName: string | null) => void;
  onCancel: () => void;
}) {
  const titleId = useId();
  const bodyId = useId();
  const session = useContext(SessionContext);
  const askName = Boolean(props.recordsPerson && session && !session.displayName);
  const [name, setName] = useState('');
  const [nameError, setNameError] = useState<string | null>(null);
  const confirm = () => {
    if (!askName) {
      props.onConfirm(props.recordsPerson ? (session?.displayName ?? null) : null);
      return;
    }
    const given = tidyName(name);
    if (!given) {
      setNameError('Enter your name: it is recorded with this change.');
      return;
    }
    session?.setDisplayName(given);
    props.onConfirm(given);
  };
  return (
    <ModalDialog
      titleId={titleId}
      alert={{ describedBy: bodyId }}
      onCancel={() => {
        if (!props.busy) props.onCancel();
      }}
    >
      <h2 id={titleId}>{props.title}</h2>
      <div id={bodyId}>{props.children}</div>
      {askName && <NameField value={name} onInput={setName} error={nameError} />}
      <ErrorNote error={props.error} />
      <div class="actions">
        <button type="button" class="secondary" onClick={props.onCancel} disabled={props.busy}>
          Cancel
        </button>
        <button type="button" class={props.danger ? 'danger' : 'primary'} onClick={confirm} disabled={props.busy}>
          {props.busy ? 'Working…' : props.confirmLabel}
        </button>
      </div>
    </ModalDialog>
  );
}

/** Sets or changes the operator's display name for this tab. */
export function NameDialog({ current, onSave, onClose }: { current: string | null; onSave: (name: string) => void; onClose: () => void }) {
  const titleId = useId();
  const [name, setName] = useState(current ?? '');
  const [error, setError] = useState<string | null>(null);
  return (
    <ModalDialog titleId={titleId} onCancel={onClose}>
      <form
        aria-labelledby={titleId}
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          const given = tidyName(name);
          if (!given) {
            setError('Enter a name.');
            return;
          }
          onSave(given);
        }}
      >
        <h2 id={titleId}>{current ? 'Change your name' : 'Your name'}</h2>
        <NameField value={name} onInput={setName} error={error} />
        <div class="actions">
          <button type="button" class="secondary" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" class="primary">
            Save name
          </button>
        </div>
      </form>
    </ModalDialog>
  );
}

/** A secret shown once (a minted key or device token): selectable, copyable, and gone once dismissed. */
export function SecretOnce({ label, value, onDone }: { label: string; value: string; onDone: () => void }) {
  const id = useId();
  const [copied, setCopied] = useState(false);
  return (
    <section class="secret" aria-labelledby={id}>
      <h3 id={id}>{label}</h3>
      <p>Copy it now: it is shown this once and cannot be shown again.</p>
      <output class="secret-value" aria-label={label}>
        {value}
      </output>
      <div class="actions">
        <button
          type="button"
          class="secondary"
          onClick={() => {
            navigator.clipboard?.writeText(value).then(
              () => setCopied(true),
              () => setCopied(false),
            );
          }}
        >
          {copied ? 'Copied' : 'Copy to clipboard'}
        </button>
        <button type="button" class="primary" onClick={onDone}>
          I have stored it
        </button>
      </div>
    </section>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" role="status" aria-live="polite">
      Loading {what}…
    </p>
  );
}

/** Async data for a page: loads on mount and whenever `deps` change; `reload` fetches again. */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[]) {
  const [state, setState] = useState<{ data: T | null; error: unknown; loading: boolean }>({ data: null, error: null, loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const controller = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    load(controller.signal).then(
      (data) => !controller.signal.aborted && setState({ data, error: null, loading: false }),
      (error) => !controller.signal.aborted && setState((s) => ({ data: s.data, error, loading: false })),
    );
    return () => controller.abort();
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  const set = useCallback((data: T) => setState({ data, error: null, loading: false }), []);
  return { ...state, reload, set };
}
