import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enqueueBatch, type BatchResult } from '../../src/producer/index.ts';
import type { SpecRecord } from '../../src/records/codec.ts';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cleanupAll } from '../support/helpers.ts';
import { entries, freshQueue } from '../support/producer.ts';

const batch = suite('enqueueBatch: one request per line (REQ-1)');
batch.after(cleanupAll);

batch('a bad line in the middle is named by its number and every other line is enqueued', async () => {
  const queue = await freshQueue();
  const lines = [
    '{"argv":["echo","one"]}',
    '  { "argv": ["echo", "two"], "priority": 5 }  ',
    '{"argv":[]}',
    'this is not JSON',
    '',
    '{"argv":["echo","five"],"stdin_text":"5"}',
  ];
  const seen: BatchResult[] = [];
  const results = await enqueueBatch(queue, lines, { onResult: (result) => seen.push(result) });
  assert.equal(seen, results, 'onResult reports each result as it happens, in line order');
  assert.equal(results.map((result) => result.line), [1, 2, 3, 4, 6], 'the blank line 5 is skipped, numbering is kept');
  const failed = results.filter((result): result is Extract<BatchResult, { error: unknown }> => 'error' in result);
  assert.equal(failed.map((result) => [result.line, result.error.code]), [
    [3, 'USAGE'],
    [4, 'USAGE'],
  ]);
  assert.ok(failed[0]?.error.message.includes('batch line 3'), 'the message names the line');
  const ids = results.flatMap((result) => ('id' in result ? [result.id] : []));
  assert.equal(await entries(queue.paths.dir('jobs')), ids, 'the good lines are published, in line order');
  const specs = await Promise.all(ids.map(async (id) => JSON.parse(await readFile(join(queue.paths.job(id), 'spec.json'), 'utf8')) as SpecRecord));
  assert.equal(specs.map((spec) => spec.argv), [['echo', 'one'], ['echo', 'two'], ['echo', 'five']]);
  assert.is(specs[1]?.priority, 5);
  assert.equal(await entries(queue.paths.job(ids[2] ?? '')), ['spec.json', 'stdin']);
  assert.equal(await entries(queue.paths.dir('tmp')), []);
});

batch('a held dedupe key fails only its own line', async () => {
  const queue = await freshQueue();
  async function* lines(): AsyncGenerator<string> {
    yield '{"argv":["a"],"dedupe":"k"}';
    yield '{"argv":["b"],"dedupe":"k"}';
    yield '{"argv":["c"],"dedupe":"other"}';
  }
  const results = await enqueueBatch(queue, lines());
  assert.ok('id' in (results[0] ?? {}));
  const second = results[1];
  assert.ok(second !== undefined && 'error' in second && second.error.code === 'DEDUPE_HELD');
  assert.is(second !== undefined && 'error' in second ? second.error.jobId : undefined, results[0] !== undefined && 'id' in results[0] ? results[0].id : 'x');
  assert.ok('id' in (results[2] ?? {}));
  assert.is((await entries(queue.paths.dir('jobs'))).length, 2);
});

batch.run();
