import { useId, useState } from 'preact/hooks';
import { admin, allPages, unwrap } from '../api';
import { useOrg } from '../context';
import { ConfirmDialog, ErrorNote, Loading, SecretOnce, Time, useLoad } from '../components';
import type { ApiKey } from '../types';
import { covers, describeSubject } from '../subjects';

/** API keys that reach this organization: mint one for it (shown once), rotate, revoke. */
export function ApiKeysPage() {
  const { org } = useOrg();
  const keys = useLoad(
    async (signal) =>
      (await allPages<ApiKey>((cursor) => unwrap(admin().GET('/api-keys', { params: { query: { cursor, limit: 200 } }, signal })))).filter((k) =>
        covers(k.subject, k.allowedOrgIds, org),
      ),
    [org.orgId],
  );
  const [name, setName] = useState('');
  const [write, setWrite] = useState(true);
  const [minting, setMinting] = useState(false);
  const [secret, setSecret] = useState<{ label: string; value: string } | null>(null);
  const [confirm, setConfirm] = useState<{ kind: 'rotate' | 'revoke'; key: ApiKey } | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [rotationNote, setRotationNote] = useState<string | null>(null);
  const ids = { name: useId(), write: useId() };

  async function mint(event: Event) {
    event.preventDefault();
    if (!name.trim()) return;
    setMinting(true);
    setError(null);
    try {
      const created = await unwrap(
        admin().POST('/api-keys', {
          body: { name: name.trim(), subject: { type: 'org', id: org.orgId }, permissions: write ? ['read', 'write'] : ['read'] },
        }),
      );
      if (created.key) setSecret({ label: `New API key “${created.name}”`, value: created.key });
      setName('');
      keys.reload();
    } catch (err) {
      setError(err);
    } finally {
      setMinting(false);
    }
  }

  async function act() {
    if (!confirm) return;
    setBusy(true);
    setError(null);
    try {
      const path = { id: confirm.key.apiKeyId };
      if (confirm.kind === 'rotate') {
        const rotated = await unwrap(admin().POST('/api-keys/{id}/rotate', { params: { path }, body: {} }));
        if (rotated.key) setSecret({ label: `Rotated key for “${rotated.name}”`, value: rotated.key });
        setRotationNote(
          rotated.previousKeyExpiresAt ? `The previous key works until ${new Date(rotated.previousKeyExpiresAt).toLocaleString('en-GB')}.` : null,
        );
      } else {
        await unwrap(admin().POST('/api-keys/{id}/revoke', { params: { path } }));
      }
      setConfirm(null);
      keys.reload();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }
  return (
    <section aria-labelledby="keys-title">
      <div class="page-head">
        <h1 id="keys-title">API keys</h1>
      </div>
      <p class="muted">Keys that reach {org.name}. A key is shown once, when it is minted or rotated; only its digest is stored.</p>
      {secret && (
        <SecretOnce
          label={secret.label}
          value={secret.value}
          onDone={() => {
            setSecret(null);
            setRotationNote(null);
          }}
        />
      )}
      {rotationNote && secret && <p class="muted">{rotationNote}</p>}
      <form class="inline-form card" onSubmit={mint} aria-label="Mint an API key">
        <div class="field">
          <label for={ids.name}>New key name</label>
          <input id={ids.name} maxLength={128} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        </div>
        <div class="field checkbox">
          <input id={ids.write} type="checkbox" checked={write} onChange={(e) => setWrite((e.target as HTMLInputElement).checked)} />
          <label for={ids.write}>Can write (declare, re-categorize, resolve, post messages)</label>
        </div>
        <button type="submit" class="primary" disabled={minting || !name.trim()}>
          Mint key
        </button>
      </form>
      {!confirm && <ErrorNote error={error} />}
      <ErrorNote error={keys.error} onRetry={keys.reload} />
      {!keys.data ? (
        keys.error ? null : (
          <Loading what="API keys" />
        )
      ) : keys.data.length === 0 ? (
        <p>No API key reaches this organization yet.</p>
      ) : (
        <table class="rows" aria-label="API keys">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Permissions</th>
              <th scope="col">Subject</th>
              <th scope="col">Status</th>
              <th scope="col">Last used</th>
              <th scope="col">Manage</th>
            </tr>
          </thead>
          <tbody>
            {keys.data.map((k) => (
              <tr key={k.apiKeyId} data-key-id={k.apiKeyId}>
                <td data-label="Name">
                  <strong>{k.name}</strong>
                  <div class="muted small">
                    created <Time iso={k.createdAt} mode="relative" />
                  </div>
                </td>
                <td data-label="Permissions">{k.permissions.join(', ')}</td>
                <td data-label="Subject">{describeSubject(k.subject, org)}</td>
                <td data-label="Status">
                  <span class={k.status === 'active' ? 'ok' : 'muted'}>{k.status === 'active' ? 'Active' : 'Revoked'}</span>
                  {k.activeUntilDate && (
                    <div class="muted small">
                      until <Time iso={k.activeUntilDate} mode="absolute" />
                    </div>
                  )}
                </td>
                <td data-label="Last used">
                  <Time iso={k.lastUsedAt} mode="relative" />
                </td>
                <td data-label="Manage">
                  {k.status === 'active' ? (
                    <div class="row-actions">
                      <button type="button" class="secondary small" aria-label={`Rotate ${k.name}`} onClick={() => setConfirm({ kind: 'rotate', key: k })}>
                        Rotate
                      </button>
                      <button type="button" class="danger small" aria-label={`Revoke ${k.name}`} onClick={() => setConfirm({ kind: 'revoke', key: k })}>
                        Revoke
                      </button>
                    </div>
                  ) : (
                    <span class="muted">—</span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {confirm && (
        <ConfirmDialog
          title={confirm.kind === 'rotate' ? `Rotate “${confirm.key.name}”?` : `Revoke “${confirm.key.name}”?`}
          confirmLabel={confirm.kind === 'rotate' ? 'Rotate key' : 'Revoke key'}
          danger={confirm.kind === 'revoke'}
          busy={busy}
          error={error}
          onConfirm={act}
          onCancel={() => setConfirm(null)}
        >
          <p>
            {confirm.kind === 'rotate'
              ? 'A successor with the same permissions is minted and shown once; the current key keeps working for 24 hours.'
              : 'Every request with this key is refused within seconds. This cannot be undone.'}
          </p>
        </ConfirmDialog>
      )}
    </section>
  );
}
