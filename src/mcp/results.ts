import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyBaseLogger } from 'fastify';
import { z } from 'zod';
import { AppError, type ErrorCode, FieldValidationError, type FieldIssue, errorStatus } from '../errors.js';
import { databaseUnavailable, isDatabaseUnavailable } from '../db/unavailable.js';
import { toFieldIssues } from '../edge/field-issues.js';
import type { OutageLog } from '../observability/outage-log.js';

/** What a failed tool call carries, as JSON in `content[0].text`: the REST status and code, and how to recover. */
export interface ToolErrorPayload {
  status: number;
  error: ErrorCode;
  message: string;
  [extra: string]: unknown;
}

/** A successful call: the structured value, and the same JSON as text for clients that only read text. */
export function toolSuccess(value: object): CallToolResult {
  return { structuredContent: value as Record<string, unknown>, content: [{ type: 'text', text: JSON.stringify(value) }] };
}

/**
 * The one place where failures become tool results. The payload is sent only as text, without
 * `structuredContent`: SDK clients (1.x) validate any `structuredContent` against the tool's
 * `outputSchema` even on `isError` results, so a structured error would make them throw instead of
 * showing the agent what went wrong.
 */
export function toolFailure(err: unknown, log: FastifyBaseLogger, tool: string, outage?: OutageLog): { result: CallToolResult; payload: ToolErrorPayload } {
  const payload = failurePayload(err, log, tool, outage);
  return { result: { isError: true, content: [{ type: 'text', text: JSON.stringify(payload) }] }, payload };
}

/** What an agent can do about each domain error; appended to the service's message. */
const RECOVERY: Partial<Record<ErrorCode, string>> = {
  org_not_covered: 'Use an orgId this API key covers; the key cannot reach other organizations.',
  permission_denied: 'This key cannot perform the operation; ask the operator for a key that holds the permission.',
  emergency_not_found: 'Check emergencyId and orgId; list_emergencies (optionally filtered by externalId) finds an emergency.',
  external_id_conflict: 'Nothing was created. Read the existing emergency with get_emergency (its emergencyId is in this error) instead of declaring again.',
  emergency_resolved: 'Resolved emergencies are immutable and nothing was changed; read it with get_emergency, or declare a new emergency.',
  rate_limited: 'Wait a moment, then retry.',
  unavailable: 'A dependency is unavailable; the outcome of a write is unknown, so read before retrying.',
};

function failurePayload(err: unknown, log: FastifyBaseLogger, tool: string, outage?: OutageLog): ToolErrorPayload {
  if (err instanceof FieldValidationError) return invalidArguments(err.issues.map(toArgumentIssue), tool);
  if (err instanceof z.ZodError) return invalidArguments(argumentIssues(err.issues), tool);
  if (err instanceof AppError) {
    const hint = RECOVERY[err.code];
    return { status: err.status, ...err.toDetail(), error: err.code, message: hint ? `${err.message} ${hint}` : err.message };
  }
  if (isDatabaseUnavailable(err)) {
    // Logged once per outage (see OutageLog), not per call.
    outage?.failed(err);
    const unavailable = databaseUnavailable();
    return { status: unavailable.status, error: unavailable.code, message: unavailable.message };
  }
  log.error({ err, tool }, 'tool call failed');
  return {
    status: errorStatus.internal,
    error: 'internal',
    message: 'Internal error; the outcome of a write is unknown. Read the emergency first (get_emergency, or list_emergencies by externalId) before retrying.',
  };
}

function invalidArguments(issues: FieldIssue[], tool: string): ToolErrorPayload {
  const summary = issues.map((i) => `${i.loc.length ? i.loc.join('.') : '(arguments)'}: ${i.msg}`).join('; ');
  return {
    status: errorStatus.validation_error,
    error: 'validation_error',
    message: `Invalid arguments for ${tool}: ${summary}. Correct these arguments (see the tool's inputSchema) and call ${tool} again.`,
    issues,
  };
}

/** Zod issues of tool arguments, located relative to `arguments` (e.g. `["location","latitude"]`). */
export function argumentIssues(issues: z.core.$ZodIssue[]): FieldIssue[] {
  return toFieldIssues('body', issues).map(toArgumentIssue);
}

/** REST path parameters and services speak of `body`/`query`/`path` and snake-case ids; a tool has only arguments. */
const PATH_TO_ARGUMENT: Record<string, string> = { org_id: 'orgId', emergency_id: 'emergencyId' };

function toArgumentIssue(issue: FieldIssue): FieldIssue {
  const [head, ...rest] = issue.loc;
  const loc = head === 'body' || head === 'query' || head === 'path' ? rest : issue.loc;
  return { ...issue, loc: loc.map((p) => (typeof p === 'string' ? (PATH_TO_ARGUMENT[p] ?? p) : p)) };
}
