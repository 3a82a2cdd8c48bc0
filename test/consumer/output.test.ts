/**
 * OutputCapture (EXEC-1, EXEC-17): what an output file keeps of a stream in
 * each output_keep mode, whatever the chunking of the pipe, and what the
 * receipt summary says about it.
 */
import { createHash } from 'node:crypto';
import { open, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { OutputCapture } from '../../src/consumer/output.ts';
import type { OutputKeep } from '../../src/model/output-keep.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';

/** Feeds `data` through a capture in chunks of pseudo-random sizes (1 to 97 bytes), then finishes it. */
async function capture(data: Buffer, limit: number, keep: OutputKeep, seed: number): Promise<{ file: Buffer; summary: Awaited<ReturnType<OutputCapture['finish']>> }> {
  const path = join(await freshDir('fsjob-output'), 'stdout.1');
  const handle = await open(path, 'wx', 0o600);
  const out = new OutputCapture(handle, limit, keep);
  let offset = 0;
  let state = seed;
  while (offset < data.length) {
    state = (state * 1103515245 + 12345) % 2147483648;
    const size = 1 + (state % 97);
    const chunk = Buffer.from(data.subarray(offset, offset + size));
    offset += chunk.length;
    if (!out.write(chunk)) await new Promise((resolve) => out.once('drain', resolve));
  }
  const summary = await out.finish();
  await handle.close();
  return { file: await readFile(path), summary };
}

function expected(data: Buffer, limit: number, keep: OutputKeep): Buffer {
  if (data.length <= limit) return data;
  if (keep === 'head') return data.subarray(0, limit);
  if (keep === 'tail') return data.subarray(data.length - limit);
  const head = Math.floor(limit / 2);
  return Buffer.concat([data.subarray(0, head), data.subarray(data.length - (limit - head))]);
}

const keeps = suite('OutputCapture keeps what output_keep says (EXEC-17)');
keeps.after(cleanupAll);

keeps('head, tail and head_tail, over streams shorter, equal to and longer than the bound, in any chunking', async () => {
  const data = Buffer.from(Array.from({ length: 3000 }, (_, i) => `${i + 1}\n`).join(''));
  for (const keep of ['head', 'tail', 'head_tail'] as const) {
    for (const [length, limit] of [[0, 100], [50, 100], [100, 100], [101, 100], [13_893, 1000], [13_893, 1], [13_893, 0], [5000, 4999]] as const) {
      const stream = data.subarray(0, length);
      for (const seed of [1, 7]) {
        const { file, summary } = await capture(stream, limit, keep, seed);
        const want = expected(stream, limit, keep);
        assert.ok(file.equals(want), `${keep}, ${length} bytes, bound ${limit}, seed ${seed}: kept ${file.length} bytes`);
        assert.equal(summary, {
          bytes_total: length,
          bytes_kept: want.length,
          truncated: length > limit,
          sha256: createHash('sha256').update(want).digest('hex'),
        });
      }
    }
  }
});

keeps.run();
