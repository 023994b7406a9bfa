import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyBaseLogger } from 'fastify';
import { z } from 'zod';
import { AppError, type ErrorCode, FieldValidationError, type FieldIssue, errorStatus } from '../errors.js';
import { DATABASE_RETRY_AFTER_SECONDS, databaseUnavailable, isDatabaseUnavailable } from '../db/unavailable.js';
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
 * The one place failures become tool results, as text only: SDK clients validate any `structuredContent` against the
 * tool's `outputSchema` even on `isError`, so a structured error would make them throw instead of showing the agent what went wrong.
 */
export function toolFailure(
  err: unknown,
  log: FastifyBaseLogger,
  tool: string,
  outage?: OutageLog,
  readOnly = false,
): { result: CallToolResult; payload: ToolErrorPayload } {
  const payload = failurePayload(err, log, tool, outage, readOnly);
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

/** A read tool changes nothing, so its failures never leave a write's outcome in doubt: it can simply be called again. */
const READ_RECOVERY: Partial<Record<ErrorCode, string>> = {
  unavailable: 'A dependency is unavailable; nothing was changed (this tool only reads), so retry later.',
};

function failurePayload(err: unknown, log: FastifyBaseLogger, tool: string, outage: OutageLog | undefined, readOnly: boolean): ToolErrorPayload {
  if (err instanceof FieldValidationError) return invalidArguments(err.issues.map(toArgumentIssue), tool);
  if (err instanceof z.ZodError) return invalidArguments(argumentIssues(err.issues), tool);
  if (err instanceof AppError) {
    const hint = (readOnly ? READ_RECOVERY[err.code] : undefined) ?? RECOVERY[err.code];
    return { status: err.status, ...err.toDetail(), error: err.code, message: hint ? `${err.message} ${hint}` : err.message };
  }
  if (isDatabaseUnavailable(err)) {
    // Logged once per outage (see OutageLog), not per call.
    outage?.failed(err);
    const unavailable = databaseUnavailable();
    const message = readOnly
      ? `The database is unavailable right now; retry after ${DATABASE_RETRY_AFTER_SECONDS} s. Nothing was changed (this tool only reads).`
      : unavailable.message;
    return { status: unavailable.status, error: unavailable.code, message };
  }
  log.error({ err, tool }, 'tool call failed');
  if (readOnly) return { status: errorStatus.internal, error: 'internal', message: 'Internal error; nothing was changed (this tool only reads), retry later.' };
  return {
    status: errorStatus.internal,
    error: 'internal',
    message: 'Internal error; the outcome of a write is unknown. Read the emergency first (get_emergency, or list_emergencies by externalId) before retrying.',
  };
}

function invalidArguments(issues: FieldIssue[], tool: string): ToolErrorPayload {
  const summary = issues.map((i) => `${i.loc.length ? i.loc.join('.') : '(arguments)'}: ${i.msg}`).join('; ');
  // A cursor the agent altered or carried over from another list has its own code: the fix is to page again, not to edit it.
  if (issues.length > 0 && issues.every((i) => i.type === 'cursor_invalid')) {
    return {
      status: errorStatus.cursor_invalid,
      error: 'cursor_invalid',
      message: `Invalid arguments for ${tool}: ${summary}. Pass the nextCursor of the previous ${tool} result unchanged, or omit cursor to start from the first page.`,
      issues,
    };
  }
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
