import type { Response } from 'express';
import { PERMISSION_SUMMARIES } from './scopes.js';

/** Like the console's: nothing from elsewhere, no scripts at all, never in a frame; the form may go here and to the client. */
function securityHeaders(redirectOrigin: string): Record<string, string> {
  return {
    'content-security-policy': `default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; frame-ancestors 'none'; form-action 'self' ${redirectOrigin}`,
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
  };
}

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export interface ConsentView {
  clientName: string;
  clientId: string;
  redirectUri: string;
  scopes: readonly string[];
  /** The authorization request's parameters, posted back as hidden fields. */
  fields: Record<string, string>;
  error?: string;
}

const STYLE = `
:root{--bg:#f5f6f8;--card:#fff;--text:#1b1f24;--muted:#5b6470;--line:#d8dce2;--accent:#1f5fbf;--danger:#b3261e;--radius:8px;
font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;font-size:15px;line-height:1.45;color:var(--text);background:var(--bg)}
*{box-sizing:border-box}body{margin:0}
.top{padding:10px 20px;background:#14213d;color:#fff;font-weight:700}
main{max-width:34rem;margin:24px auto;padding:0 16px}
.card{background:var(--card);border:1px solid var(--line);border-radius:var(--radius);padding:20px}
h1{font-size:1.35rem;margin:.2rem 0 .8rem}.muted{color:var(--muted)}.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;word-break:break-all}
ul{padding-left:1.2rem}li{margin:.25rem 0}
label{display:block;font-weight:600;margin:1rem 0 .3rem}
input[type=password]{width:100%;padding:8px 10px;border:1px solid var(--line);border-radius:6px;font:inherit}
.actions{display:flex;gap:10px;margin-top:1rem;flex-wrap:wrap}
button{font:inherit;padding:8px 16px;border-radius:6px;border:1px solid var(--accent);cursor:pointer}
button.primary{background:var(--accent);color:#fff}button.secondary{background:#fff;color:var(--accent)}
.error{color:var(--danger);border:1px solid var(--danger);border-radius:6px;padding:8px 10px;margin-bottom:1rem}
`;

/** The consent page: who asks, where the answer goes, what it may do; approved by signing in with an API key, as in the console. */
export function renderConsentPage(res: Response, status: number, view: ConsentView): void {
  const redirect = new URL(view.redirectUri);
  const hidden = Object.entries(view.fields)
    .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
    .join('\n');
  const scopes = view.scopes
    .map((scope) => `<li><span class="mono">${escapeHtml(scope)}</span> <span class="muted">${escapeHtml(PERMISSION_SUMMARIES[scope] ?? '')}</span></li>`)
    .join('\n');
  const html = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Allow ${escapeHtml(view.clientName)} to use the tool server</title><style>${STYLE}</style></head>
<body>
<div class="top">Emergency API</div>
<main><div class="card">
<h1>Allow <span id="client-name">${escapeHtml(view.clientName)}</span> to use the tool server?</h1>
${view.error ? `<p class="error" role="alert">${escapeHtml(view.error)}</p>` : ''}
<p>It asks to act with one of your API keys, limited to what that key may do and to the orgs it reaches:</p>
<ul id="scopes">${scopes}</ul>
<p class="muted">After you answer, your browser goes to <span class="mono" id="redirect-host">${escapeHtml(redirect.host || redirect.protocol)}</span>.
Client id: <span class="mono">${escapeHtml(view.clientId)}</span>. Revoking the key ends every token given with it.</p>
<form method="post" action="/oauth/authorize">
${hidden}
<label for="api_key">Sign in with an API key (enk_live_…)</label>
<input id="api_key" name="api_key" type="password" autocomplete="off" spellcheck="false">
<div class="actions">
<button class="primary" type="submit" name="decision" value="approve">Approve</button>
<button class="secondary" type="submit" name="decision" value="deny">Deny</button>
</div>
</form>
</div></main>
</body></html>`;
  res
    .status(status)
    .set(securityHeaders(redirect.origin === 'null' ? '' : redirect.origin))
    .type('html')
    .send(html);
}
