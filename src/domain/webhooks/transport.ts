/** What a webhook request sent at once (outside the delivery queue) came to. */
export interface WebhookSendResult {
  ok: boolean;
  statusCode: number | null;
  body: string | null;
  error: string | null;
  durationMs: number;
}

/**
 * Sends one signed webhook request now, under the same outbound-URL policy and DNS bounds as the
 * dispatcher; the test ping uses it, so the domain needs no HTTP client of its own.
 */
export interface WebhookTransport {
  sendNow(url: string, headers: Record<string, string>, body: string, options?: { timeoutMs?: number }): Promise<WebhookSendResult>;
}
