import { useEffect, useId, useState } from 'preact/hooks';
import { admin, allPages, pub, unwrap } from '../api';
import { useLiveEvents, useOrg, useSession } from '../context';
import { ConfirmDialog, ErrorNote, Loading, SecretOnce, Time, useLoad } from '../components';
import type { AdminDevice, DeviceStatus } from '../types';
import { DeadlineSettings } from './deadline-settings';

/**
 * Base stations: presence and acknowledgement lag for every key; tokens, revocation, new devices and the
 * acknowledgement deadline for admin keys.
 */
export function DevicesPage() {
  const { org } = useOrg();
  const session = useSession();
  const isAdmin = session.kind === 'admin';
  const devices = useLoad<DeviceStatus[]>(
    (signal) =>
      allPages((cursor) => unwrap(pub().GET('/orgs/{org_id}/devices', { params: { path: { org_id: org.orgId }, query: { cursor, limit: 200 } }, signal }))),
    [org.orgId],
  );
  const [secret, setSecret] = useState<{ label: string; value: string } | null>(null);
  const [confirm, setConfirm] = useState<{ kind: 'revoke' | 'rotate'; device: DeviceStatus } | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [name, setName] = useState('');
  const [adding, setAdding] = useState(false);
  const nameId = useId();

  // Presence and lag change without events (connections, acks): asked for again every few seconds.
  useEffect(() => {
    const timer = setInterval(devices.reload, 5000);
    return () => clearInterval(timer);
  }, [devices.reload]);
  useLiveEvents(() => devices.reload());

  async function act() {
    if (!confirm) return;
    setBusy(true);
    setError(null);
    try {
      const path = { device_id: confirm.device.deviceId };
      if (confirm.kind === 'rotate') {
        const record = await unwrap(admin().POST('/devices/{device_id}/rotate-token', { params: { path } }));
        if (record.token) setSecret({ label: `New token for ${record.name}`, value: record.token });
      } else {
        await unwrap(admin().POST('/devices/{device_id}/revoke', { params: { path } }));
      }
      setConfirm(null);
      devices.reload();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  async function add(event: Event) {
    event.preventDefault();
    if (!name.trim()) return;
    setAdding(true);
    setError(null);
    try {
      const record = (await unwrap(
        admin().POST('/orgs/{org_id}/devices', { params: { path: { org_id: org.orgId } }, body: { name: name.trim() } }),
      )) as AdminDevice;
      if (record.token) setSecret({ label: `Token for ${record.name}`, value: record.token });
      setName('');
      devices.reload();
    } catch (err) {
      setError(err);
    } finally {
      setAdding(false);
    }
  }

  const list = devices.data ?? [];
  const online = list.filter((d) => d.status === 'active' && d.online).length;
  const active = list.filter((d) => d.status === 'active').length;
  return (
    <section aria-labelledby="devices-title">
      <div class="page-head">
        <h1 id="devices-title">Base stations</h1>
        <p class="muted">
          {online} of {active} online
        </p>
      </div>
      {secret && <SecretOnce label={secret.label} value={secret.value} onDone={() => setSecret(null)} />}
      {isAdmin && (
        <form class="inline-form" onSubmit={add} aria-label="Add a base station">
          <div class="field">
            <label for={nameId}>New base station name</label>
            <input id={nameId} maxLength={128} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
          </div>
          <button type="submit" class="primary" disabled={adding || !name.trim()}>
            Add base station
          </button>
        </form>
      )}
      {!confirm && <ErrorNote error={error} />}
      <ErrorNote error={devices.error} onRetry={devices.reload} />
      {!devices.data ? (
        devices.error ? null : (
          <Loading what="base stations" />
        )
      ) : list.length === 0 ? (
        <p>No base stations yet.</p>
      ) : (
        <table class="rows" aria-label="Base stations">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Connection</th>
              <th scope="col">Last seen</th>
              <th scope="col">Acknowledged up to</th>
              <th scope="col">Lag</th>
              {isAdmin && <th scope="col">Manage</th>}
            </tr>
          </thead>
          <tbody>
            {list.map((d) => (
              <tr key={d.deviceId} data-device-id={d.deviceId}>
                <td data-label="Name">
                  <strong>{d.name}</strong>
                  {d.status === 'revoked' && <span class="badge status-resolved"> Revoked</span>}
                </td>
                <td data-label="Connection">
                  <span class={`dot ${d.online ? 'ok' : 'off'}`} aria-hidden="true" /> {d.online ? 'Online' : 'Offline'}
                </td>
                <td data-label="Last seen">
                  <Time iso={d.lastSeenAt} mode="relative" />
                </td>
                <td data-label="Acknowledged up to">offset {d.ackedOffset}</td>
                <td data-label="Lag">
                  <span class={d.lag === 0 ? 'ok' : 'warn'}>{d.lag === 0 ? 'Caught up' : `${d.lag} event${d.lag === 1 ? '' : 's'} behind`}</span>
                </td>
                {isAdmin && (
                  <td data-label="Manage">
                    {d.status === 'active' ? (
                      <div class="row-actions">
                        <button
                          type="button"
                          class="secondary small"
                          aria-label={`Rotate token of ${d.name}`}
                          onClick={() => setConfirm({ kind: 'rotate', device: d })}
                        >
                          Rotate token
                        </button>
                        <button type="button" class="danger small" aria-label={`Revoke ${d.name}`} onClick={() => setConfirm({ kind: 'revoke', device: d })}>
                          Revoke
                        </button>
                      </div>
                    ) : (
                      <span class="muted">—</span>
                    )}
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {isAdmin && <DeadlineSettings orgId={org.orgId} />}
      {confirm && (
        <ConfirmDialog
          title={confirm.kind === 'rotate' ? `Rotate the token of ${confirm.device.name}?` : `Revoke ${confirm.device.name}?`}
          confirmLabel={confirm.kind === 'rotate' ? 'Rotate token' : 'Revoke device'}
          danger={confirm.kind === 'revoke'}
          busy={busy}
          error={error}
          onConfirm={act}
          onCancel={() => setConfirm(null)}
        >
          <p>
            {confirm.kind === 'rotate'
              ? 'A new token is minted and shown once; the base station must be given it to connect again.'
              : 'The base station is disconnected within seconds and can never connect again.'}
          </p>
        </ConfirmDialog>
      )}
    </section>
  );
}
