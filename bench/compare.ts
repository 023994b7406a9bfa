/**
 * Before/after of two trees from the suite's raw results (bench/results.json of `npm run bench`, one file per run):
 * every row both sides measured, its value as the median over each side's runs, after ÷ before, and whether
 * that is better (req/s, devices/s, deliveries/s: higher; ms, MB: lower), with each side's same-run ratio and
 * result. Prints a Markdown table.
 *
 *   node --import tsx bench/compare.ts --before a.json,b.json --after c.json,d.json [--min-change 0.1]
 *
 * --min-change: also list, after the table, the rows whose median moved the wrong way by more than this
 * fraction (default 0.1), the ones to measure again before calling them a regression.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { Row } from './lib/report.js';

const { values } = parseArgs({ options: { before: { type: 'string' }, after: { type: 'string' }, 'min-change': { type: 'string' } } });
if (!values.before || !values.after) throw new Error('usage: bench/compare.ts --before a.json[,b.json] --after c.json[,d.json]');
const minChange = Number(values['min-change'] ?? 0.1);

type Key = string;
const keyOf = (r: Row): Key => `${r.database}\u0000${r.scenario}\u0000${r.metric}`;

/** Rows with a value, by key, from every file of one side. */
function side(files: string): Map<Key, Row[]> {
  const byKey = new Map<Key, Row[]>();
  for (const file of files.split(',')) {
    const { rows } = JSON.parse(readFileSync(file.trim(), 'utf8')) as { rows: Row[] };
    for (const row of rows) {
      if (typeof row.value !== 'number') continue;
      const list = byKey.get(keyOf(row)) ?? [];
      list.push(row);
      byKey.set(keyOf(row), list);
    }
  }
  return byKey;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

const figure = (v: number) => (Math.abs(v) >= 100 ? Math.round(v).toLocaleString('en-US') : Number(v.toPrecision(3)).toString());
/** The median of the rows' same-run ratios; NaN when none has one. */
const ratioOf = (rows: Row[]) => {
  const known = rows.map((r) => r.ratio).filter((x): x is number => typeof x === 'number');
  return known.length ? median(known) : Number.NaN;
};
const ratios = (rows: Row[]) => (Number.isNaN(ratioOf(rows)) ? '—' : `${figure(ratioOf(rows))}×`);

const before = side(values.before);
const after = side(values.after);
const lines = [
  '| database | scenario | metric | before → after (median) | after ÷ before | | same-run ratio, before → after | result, before → after |',
  '|---|---|---|---|---|---|---|---|',
];
const worse: string[] = [];
for (const [key, afterRows] of after) {
  const beforeRows = before.get(key);
  if (!beforeRows) continue;
  const [database, scenario, metric] = key.split('\u0000');
  const unit = afterRows[0]!.unit;
  const higherIsBetter = unit === 'req/s' || unit === 'devices/s' || unit === 'deliveries/s';
  const b = median(beforeRows.map((r) => r.value!));
  const a = median(afterRows.map((r) => r.value!));
  const change = a / b;
  // A row whose value is a rival's figure (the best peer's p99 against the gateway's) is judged by its ratio.
  const byRatio = metric!.startsWith("best peer's");
  const better = byRatio ? ratioOf(afterRows) >= ratioOf(beforeRows) : higherIsBetter ? change >= 1 : change <= 1;
  const statuses = (rows: Row[]) => [...new Set(rows.map((r) => r.status))].join('/');
  lines.push(
    `| ${database} | ${scenario} | ${metric} | ${figure(b)} → ${figure(a)} ${unit} | ${change.toFixed(2)} | ${better ? 'better' : 'worse'} | ${ratios(beforeRows)} → ${ratios(afterRows)} | ${statuses(beforeRows)} → ${statuses(afterRows)} |`,
  );
  const moved = byRatio ? ratioOf(afterRows) / ratioOf(beforeRows) : change;
  if (!better && Math.abs(moved - 1) > minChange) worse.push(`${database} ${scenario}: ${metric} (${moved.toFixed(2)}${byRatio ? ', ratio' : ''})`);
}
console.log(lines.join('\n'));
console.log(`\nruns: ${values.before.split(',').length} before, ${values.after.split(',').length} after`);
if (worse.length) console.log(`\nworse by more than ${minChange * 100} %:\n${worse.map((w) => `- ${w}`).join('\n')}`);
