import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { generateClientFiles } from '../../scripts/generate-client.js';

/** The committed client types must be what the service's OpenAPI documents generate today. */
describe('generated TypeScript client', () => {
  // Generation is deterministic (the documents are built from the route table, then formatted by
  // Biome), so any difference means the documents changed since the files were generated.
  it('is byte-identical to a fresh generation from the OpenAPI documents', async () => {
    for (const file of await generateClientFiles({ silent: true })) {
      const committed = await readFile(file.path, 'utf8').catch(() => null);
      assert.ok(committed !== null, `${file.name} is missing: run npm run client:generate`);
      if (committed !== file.content) {
        const a = committed.split('\n');
        const b = file.content.split('\n');
        const line = a.findIndex((text, i) => text !== b[i]);
        assert.fail(
          `${file.name} is stale (it differs from the OpenAPI document from line ${line + 1}: ` +
            `committed ${JSON.stringify(a[line] ?? '<end of file>')}, generated ${JSON.stringify(b[line] ?? '<end of file>')}); ` +
            'run npm run client:generate and commit the result',
        );
      }
    }
  });
});
