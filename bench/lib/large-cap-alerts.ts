/**
 * CAP 1.2 alerts as large as the ingest accepts, built from the OASIS severe-thunderstorm example (test/cap/fixtures):
 * its header and first info with either many minimal <info> blocks or many minimal <area> blocks, whitespace between
 * tags dropped so that as many as asked fit in the body limit.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './harness.js';

export type LargeCapVariant = 'info' | 'area';

const example = readFileSync(join(ROOT, 'test/cap/fixtures/a2-severe-thunderstorm-warning.xml'), 'utf8').replace(/>\s+</g, '><').trim();
const [head] = example.split('<info>');
const info = /<info>.*<\/info>/s.exec(example)![0];
const field = (name: string) => new RegExp(`<${name}>.*?</${name}>`).exec(info)![0];
// The event's SAME code stands for its name in the many blocks, so that 1,800 of them fit.
const sameCode = /<value>([^<]*)<\/value>/.exec(field('eventCode'))![1];
const minimalInfo = `<info>${field('category')}<event>${sameCode}</event>${['urgency', 'severity', 'certainty'].map(field).join('')}</info>`;
const [infoBeforeArea] = info.split('<area>');
const minimalArea = (i: number) => `<area><areaDesc>${(i % 100).toString(36)}</areaDesc></area>`;

/** The alert with `count` blocks of the variant (fewer when they would not fit in `limitBytes`); the count is returned. */
export function largeCapAlert(variant: LargeCapVariant, count: number, identifier: string, limitBytes: number): { xml: string; blocks: number } {
  const alertHead = head!.replace(/<identifier>[^<]*<\/identifier>/, `<identifier>${identifier}</identifier>`);
  const build = (n: number) =>
    variant === 'info'
      ? `${alertHead}${minimalInfo.repeat(n)}</alert>`
      : `${alertHead}${infoBeforeArea}${Array.from({ length: n }, (_, i) => minimalArea(i)).join('')}</info></alert>`;
  let blocks = count;
  let xml = build(blocks);
  while (Buffer.byteLength(xml) > limitBytes && blocks > 1) {
    blocks = Math.floor(blocks * (limitBytes / Buffer.byteLength(xml))) - 1;
    xml = build(blocks);
  }
  return { xml, blocks };
}
