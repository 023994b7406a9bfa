/** The admin commands' human-readable output (without `--json`): a record as `key: value` lines, a list as an aligned table. */

/** Fields that hold a secret the service never shows again. */
const SECRET_FIELDS = new Set(['key', 'secret', 'token', 'adminKey']);
const SHOWN_ONCE = '(shown once)';
/** Fields where null is not "nothing": no filter means every org, every event type, no expiry. */
const NULL_MEANS: Record<string, string> = { allowedOrgIds: 'all', eventTypes: 'all', activeUntilDate: 'never' };

const fieldValue = (field: string, value: unknown, separator?: string) =>
  value === null && NULL_MEANS[field] ? NULL_MEANS[field] : formatValue(value, separator);
/** Wider table cells (URLs, error texts) are cut, except in the last column, which no other follows; `--json` has them whole. */
const MAX_CELL_WIDTH = 64;

/** Control characters (a receiver's response body, a name) must not break a line or drive the terminal. */
function printable(text: string): string {
  let out = '';
  for (const char of text) {
    const code = char.codePointAt(0)!;
    if (char === '\n') out += '\\n';
    else if (char === '\r') out += '\\r';
    else if (char === '\t') out += '\\t';
    else if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += char;
  }
  return out;
}

/** One value on one line: null as "-", lists comma-separated (`separator`), a subject as `type:id`. */
export function formatValue(value: unknown, separator = ', '): string {
  if (value === null || value === undefined) return '-';
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (Array.isArray(value)) return value.length === 0 ? '-' : value.map((v) => formatValue(v)).join(separator);
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    const keys = entries.map(([k]) => k).join(',');
    if (keys === 'type,id' || keys === 'type') return entries.map(([, v]) => formatValue(v)).join(':');
    return entries.map(([k, v]) => `${k} ${formatValue(v)}`).join(', ');
  }
  return printable(String(value));
}

/** `key: value` lines with exactly one space after the colon, which scripts reading the text rely on; secrets carry "(shown once)". */
export function formatRecord(record: Record<string, unknown>): string {
  return Object.entries(record)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}: ${fieldValue(k, v)}${SECRET_FIELDS.has(k) && typeof v === 'string' ? `   ${SHOWN_ONCE}` : ''}`)
    .join('\n');
}

/** `lastUsedAt` -> `LAST USED AT`. */
function header(column: string): string {
  return column.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toUpperCase();
}

function cell(field: string, value: unknown, last: boolean): string {
  const text = fieldValue(field, value, ',');
  return text.length > MAX_CELL_WIDTH && !last ? `${text.slice(0, MAX_CELL_WIDTH - 1)}…` : text;
}

/** Rows under a header, columns aligned (the last one is not padded). */
export function formatTable(items: Record<string, unknown>[], columns: string[]): string {
  const rows = [columns.map(header), ...items.map((item) => columns.map((c, i) => cell(c, item[c], i === columns.length - 1)))];
  const widths = columns.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows.map((row) => row.map((text, i) => (i === row.length - 1 ? text : text.padEnd(widths[i]!))).join('  ')).join('\n');
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A result's `items` as a table (of `columns`, or every field), any other fields as `key: value` lines above it. */
export function formatResult(result: unknown, columns?: string[]): string {
  if (result === undefined) return '';
  if (!isRecord(result)) return formatValue(result);
  const { items, ...rest } = result;
  if (!Array.isArray(items)) return formatRecord(result);
  const parts: string[] = [];
  if (Object.keys(rest).length > 0) parts.push(formatRecord(rest));
  const rows = items.filter(isRecord);
  if (rows.length === 0) {
    parts.push('(none)');
  } else {
    const cols = columns ?? [...new Set(rows.flatMap((row) => Object.keys(row)))];
    parts.push(formatTable(rows, cols));
  }
  return parts.join('\n\n');
}
