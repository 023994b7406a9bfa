/** Rows of the benchmark suite's table: one measured figure, its same-run baseline, and the target it is held to. */

export type Database = 'sqlite' | 'postgres';

/** `on: 'ratio'` compares value ÷ baseline with the threshold; `on: 'value'` compares the value itself. */
export interface Target {
  on: 'ratio' | 'value';
  op: '>=' | '<';
  threshold: number;
}

export interface RowInput {
  metric: string;
  value: number | null;
  unit: string;
  baseline?: number | null;
  baselineLabel?: string;
  target?: Target;
  note?: string;
  /** Set when the measurement is not trustworthy (errors or non-2xx answers under load): the row fails. */
  invalid?: string;
}

export interface Row {
  scenario: string;
  database: Database;
  metric: string;
  value: number | null;
  unit: string;
  baseline: number | null;
  baselineLabel: string | null;
  ratio: number | null;
  target: Target | null;
  /** null: no target (informational), or nothing measured. */
  pass: boolean | null;
  status: 'pass' | 'fail' | 'info' | 'n/a' | 'error' | 'skipped';
  note: string | null;
}

export function makeRow(scenario: string, database: Database, input: RowInput): Row {
  const baseline = input.baseline ?? null;
  const value = input.value;
  const ratio = value !== null && baseline !== null && Number.isFinite(value) && Number.isFinite(baseline) && baseline > 0 ? value / baseline : null;
  const target = input.target ?? null;
  let pass: boolean | null = null;
  let status: Row['status'] = 'info';
  const measured = target ? (target.on === 'ratio' ? ratio : value) : null;
  if (target && (measured === null || !Number.isFinite(measured))) status = 'n/a';
  else if (target && measured !== null) {
    pass = !input.invalid && (target.op === '>=' ? measured >= target.threshold : measured < target.threshold);
    status = pass ? 'pass' : 'fail';
  }
  const notes = [input.invalid, input.note].filter(Boolean).join('; ');
  return {
    scenario,
    database,
    metric: input.metric,
    value,
    unit: input.unit,
    baseline,
    baselineLabel: input.baselineLabel ?? null,
    ratio,
    target,
    pass,
    status,
    note: notes || null,
  };
}

/** A row standing for a whole scenario that produced no figures (skipped, or its process failed). */
export function statusRow(scenario: string, database: Database, status: 'error' | 'skipped', note: string): Row {
  return {
    scenario,
    database,
    metric: status === 'skipped' ? '(skipped)' : '(run failed)',
    value: null,
    unit: '',
    baseline: null,
    baselineLabel: null,
    ratio: null,
    target: null,
    pass: status === 'error' ? false : null,
    status,
    note,
  };
}

export function formatNumber(n: number | null, unit = ''): string {
  if (n === null || !Number.isFinite(n)) return '—';
  const digits = Math.abs(n) >= 100 ? 0 : Math.abs(n) >= 10 ? 1 : 2;
  const text = n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  return unit ? `${text} ${unit}` : text;
}

export function formatTarget(row: Row): string {
  const t = row.target;
  if (!t) return '—';
  const op = t.op === '>=' ? '≥' : '<';
  return t.on === 'ratio' ? `${op} ${t.threshold}×` : `${op} ${t.threshold.toLocaleString('en-US')} ${row.unit}`;
}

/** A ratio as text: two decimals, or two significant digits below 0.1 (a route at 0.0013× a baseline does not read 0.00×). */
export function ratioText(ratio: number): string {
  return ratio === 0 || !Number.isFinite(ratio) || Math.abs(ratio) >= 0.1 ? ratio.toFixed(2) : ratio.toPrecision(2);
}

export function formatRatio(ratio: number | null): string {
  return ratio === null ? '—' : `${ratioText(ratio)}×`;
}

/** The suite's one table, as fixed-width text. */
export function renderTable(rows: Row[]): string {
  const header = ['scenario', 'database', 'metric', 'value', 'baseline', 'ratio', 'target', 'result', 'note'];
  const cells = rows.map((r) => [
    r.scenario,
    r.database === 'postgres' ? 'postgresql' : 'sqlite',
    r.metric,
    formatNumber(r.value, r.unit),
    r.baseline === null ? '—' : formatNumber(r.baseline, r.unit),
    formatRatio(r.ratio),
    formatTarget(r),
    r.status.toUpperCase(),
    r.note ?? '',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => [...c[i]!].length)));
  const numeric = new Set([3, 4, 5]);
  const line = (c: string[]) =>
    c
      .map((text, i) => (i === c.length - 1 ? text : numeric.has(i) ? text.padStart(widths[i]!) : text.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w, i) => (i === widths.length - 1 ? '----' : '-'.repeat(w))).join('  '), ...cells.map(line)].join('\n');
}

/** The same rows as a Markdown table (bench/results.md), for the README: every figure from one run. */
export function renderMarkdown(rows: Row[], subtitle: string): string {
  const cell = (s: string) => s.replaceAll('|', '\\|');
  const lines = [
    `_${cell(subtitle)}_`,
    '',
    '| scenario | database | metric | value | same-run baseline | ratio | target | result |',
    '|---|---|---|---:|---:|---:|---|---|',
    ...rows
      .map((r) =>
        [
          r.scenario,
          r.database === 'postgres' ? 'PostgreSQL' : 'SQLite',
          r.metric,
          formatNumber(r.value, r.unit),
          r.baseline === null ? '—' : `${formatNumber(r.baseline, r.unit)}${r.baselineLabel ? ` (${r.baselineLabel})` : ''}`,
          formatRatio(r.ratio),
          formatTarget(r),
          `${r.status}${r.note ? `: ${r.note}` : ''}`,
        ]
          .map(cell)
          .join(' | '),
      )
      .map((line) => `| ${line} |`),
  ];
  return `${lines.join('\n')}\n`;
}

/** How far a row is from its target, on one scale for every kind of target: ≥ 1 meets it (for "<" targets the budget ÷ the value). */
export function targetScore(row: Row): number | null {
  const t = row.target;
  if (!t) return null;
  const measured = t.on === 'ratio' ? row.ratio : row.value;
  if (measured === null || !Number.isFinite(measured)) return null;
  if (t.op === '>=') return measured / t.threshold;
  return measured > 0 ? t.threshold / measured : Infinity;
}

const escapeXml = (s: string) => s.replace(/[<>&"']/g, (c) => `&${{ '<': 'lt', '>': 'gt', '&': 'amp', '"': 'quot', "'": 'apos' }[c]};`);

/**
 * A hand-drawn SVG bar chart. Top: every row with a target, as measured ÷ target (a dashed line marks
 * the target; green bars meet it, red ones do not). Bottom: same-run ratios that have no target.
 */
export function renderSvg(rows: Row[], subtitle: string): string {
  const width = 1120;
  const labelWidth = 490;
  const barLeft = labelWidth + 10;
  const barWidth = 340;
  const rowHeight = 24;
  const targeted = rows.filter((r) => r.target);
  const informational = rows.filter((r) => !r.target && r.ratio !== null);
  const parts: string[] = [];
  let y = 30;
  const text = (x: number, yy: number, s: string, attrs = '') => parts.push(`<text x="${x}" y="${yy}" ${attrs}>${escapeXml(s)}</text>`);
  const label = (r: Row) => {
    const full = `${r.scenario} · ${r.database === 'postgres' ? 'PostgreSQL' : 'SQLite'} · ${r.metric}`;
    return full.length > 76 ? `${full.slice(0, 75)}…` : full; // ~6.5 px a character at 12 px: keep inside the label column
  };

  text(16, y, 'emergency-api benchmarks', 'font-size="18" font-weight="bold"');
  y += 20;
  text(16, y, subtitle, 'font-size="12" fill="#555"');
  y += 30;

  const scaleMax = 2; // bars past 2× the target are drawn at 2× with the figure written next to them
  text(16, y, 'Against targets: measured ÷ target (1 = target met; for latency and memory, budget ÷ measured)', 'font-size="13" font-weight="bold"');
  y += 10;
  const axisTop = y;
  for (const r of targeted) {
    y += rowHeight;
    const score = targetScore(r);
    text(labelWidth, y, label(r), 'text-anchor="end" font-size="12"');
    if (score === null) {
      text(barLeft, y, `n/a${r.note ? `: ${r.note}` : ''}`, 'font-size="12" fill="#888"');
      continue;
    }
    const length = (Math.min(score, scaleMax) / scaleMax) * barWidth;
    const colour = r.pass ? '#2e7d32' : '#c62828';
    parts.push(`<rect x="${barLeft}" y="${y - 13}" width="${Math.max(1, length).toFixed(1)}" height="16" fill="${colour}" rx="2"/>`);
    const measured = r.target!.on === 'ratio' ? formatRatio(r.ratio) : formatNumber(r.value, r.unit);
    text(
      barLeft + barWidth + 10,
      y,
      `${measured} (target ${formatTarget(r)}) ${r.status.toUpperCase()}${score > scaleMax ? ' ▶' : ''}`,
      `font-size="12" fill="${colour}"`,
    );
  }
  const targetX = barLeft + barWidth / scaleMax;
  parts.push(`<line x1="${targetX}" y1="${axisTop}" x2="${targetX}" y2="${y + 6}" stroke="#333" stroke-dasharray="4 3"/>`);
  text(targetX, y + 20, 'target', 'text-anchor="middle" font-size="11" fill="#333"');
  text(barLeft, y + 20, '0', 'font-size="11" fill="#666"');
  text(barLeft + barWidth, y + 20, `${scaleMax}×`, 'text-anchor="end" font-size="11" fill="#666"');
  y += 50;

  if (informational.length) {
    const maxRatio = Math.max(1, ...informational.map((r) => r.ratio!));
    text(16, y, 'Ratios to the same-run baseline (no target)', 'font-size="13" font-weight="bold"');
    y += 10;
    const top = y;
    for (const r of informational) {
      y += rowHeight;
      text(labelWidth, y, label(r), 'text-anchor="end" font-size="12"');
      parts.push(`<rect x="${barLeft}" y="${y - 13}" width="${Math.max(1, (r.ratio! / maxRatio) * barWidth).toFixed(1)}" height="16" fill="#1565c0" rx="2"/>`);
      text(
        barLeft + barWidth + 10,
        y,
        `${formatRatio(r.ratio)} (${formatNumber(r.value, r.unit)} vs ${formatNumber(r.baseline, r.unit)})`,
        'font-size="12" fill="#1565c0"',
      );
    }
    const oneX = barLeft + barWidth / maxRatio;
    parts.push(`<line x1="${oneX}" y1="${top}" x2="${oneX}" y2="${y + 6}" stroke="#333" stroke-dasharray="2 3"/>`);
    text(oneX, y + 20, '1× baseline', 'text-anchor="middle" font-size="11" fill="#333"');
    y += 40;
  }

  const failed = rows.filter((r) => r.status === 'error' || r.status === 'skipped');
  for (const r of failed) {
    text(
      16,
      y,
      `${r.scenario} · ${r.database === 'postgres' ? 'PostgreSQL' : 'SQLite'}: ${r.status}${r.note ? ` (${r.note})` : ''}`,
      'font-size="12" fill="#888"',
    );
    y += 18;
  }
  const height = y + 10;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}
