import type { AppContext } from '../context.js';
import type { WebhookSendResult } from '../domain/webhooks/transport.js';
import { WebhookSender } from './http-sender.js';
import { webhookTargetResolver } from './target-resolver.js';

/** One request through a sender of its own, closed afterwards: a test ping is rare and never queued. */
export async function sendWebhookNow(
  ctx: AppContext,
  url: string,
  headers: Record<string, string>,
  body: string,
  options: { timeoutMs?: number } = {},
): Promise<WebhookSendResult> {
  const sender = new WebhookSender({
    allowPrivateTargets: ctx.config.WEBHOOK_ALLOW_PRIVATE_TARGETS,
    timeoutMs: options.timeoutMs,
    resolver: webhookTargetResolver(ctx),
  });
  try {
    return await sender.send(url, headers, body);
  } finally {
    await sender.close();
  }
}
