/**
 * Waiting on many jobs from Node (waitForMany, unfinishedJobs,
 * summaryExitCode): which jobs a selection means, receipts reported as jobs
 * finish, and one exit status that sums them up whatever order they finished
 * in. Receipts are written straight (writeReceipt; finishJob also removes
 * the ready entry, READY-2, as a consumer does), so each finish happens
 * exactly when the test says.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enqueue, release, summaryExitCode, unfinishedJobs, waitForMany } from '../../src/producer/index.ts';
import type { ReceiptRecord } from '../../src/records/codec.ts';
import type { Dirent } from 'node:fs';
import * as nodeFs from 'node:fs/promises';
import { realReads, type ReadCalls, type SafeFsSeam } from '../../src/fs/seam.ts';
import type { Queue } from '../../src/model/queue.ts';
import { cleanupAll, rejectsWith } from '../support/helpers.ts';
import { finishJob, freshQueue, withSeam, writeReceipt } from '../support/producer.ts';
import { waitFor } from '../support/consumer.ts';

const many = suite('waitForMany: every receipt, as jobs finish, and their summary');
many.after(cleanupAll);

const failed = (code: number): Partial<ReceiptRecord> => ({ outcome: 'failed', exit_code: code, status: { exit: code, signal: null } });

many('jobs finished already come first in the order given, the rest as they finish; the receipts come back in the order given', async () => {
  const queue = await freshQueue('wait-many');
  const [a, b, c] = [await enqueue(queue, { argv: ['true'] }), await enqueue(queue, { argv: ['true'] }), await enqueue(queue, { argv: ['true'] })];
  await writeReceipt(queue, b.id, failed(3));
  await writeReceipt(queue, a.id);
  const seen: string[] = [];
  const waiting = waitForMany(queue, [c.id, b.id, a.id, b.id], { unservedNotice: false, pollMs: 50, onReceipt: (receipt) => seen.push(receipt.job_id) });
  await waitFor('the finished two reported', () => seen.length === 2);
  assert.equal(seen, [b.id, a.id], 'the order given, an id named twice once');
  await finishJob(queue, c.id, failed(5));
  const result = await waiting;
  assert.equal(seen, [b.id, a.id, c.id]);
  assert.equal(result.receipts.map((receipt) => receipt.job_id), [c.id, b.id, a.id]);
  assert.is(result.exitCode, 5, 'the first in the order given that did not succeed, though it finished last');
});

many('summaryExitCode: 0 only when every job succeeded (and for none)', () => {
  const r = (exit_code: number) => ({ exit_code }) as ReceiptRecord;
  assert.is(summaryExitCode([]), 0);
  assert.is(summaryExitCode([r(0), r(0)]), 0);
  assert.is(summaryExitCode([r(0), r(130), r(1)]), 130);
});

many('an unknown id is NOT_FOUND before waiting; a bounded wait is TIMEOUT naming what is unfinished', async () => {
  const queue = await freshQueue('wait-many');
  const [done, open] = [await enqueue(queue, { argv: ['true'] }), await enqueue(queue, { argv: ['true'] })];
  await writeReceipt(queue, done.id);
  const seen: string[] = [];
  await rejectsWith(waitForMany(queue, [done.id, '1796114669000000000-0123456789abcdef'], { unservedNotice: false, onReceipt: (receipt) => seen.push(receipt.job_id) }), 'NOT_FOUND');
  assert.equal(seen, [], 'nothing reported before every id is known');
  const error = await rejectsWith(waitForMany(queue, [done.id, open.id], { unservedNotice: false, timeoutMs: 0, onReceipt: (receipt) => seen.push(receipt.job_id) }), 'TIMEOUT');
  assert.is(error.jobId, open.id);
  assert.equal(seen, [done.id], 'the receipt that came before the deadline was reported');
});

/** The queue reopened with a seam that records the job of each look at a receipt.json and counts the listings of ready/. */
async function watched(root: string): Promise<{ queue: Queue; looks: string[]; listings: () => number }> {
  const looks: string[] = [];
  let listings = 0;
  const note = (path: string): void => {
    const match = /\/jobs\/([^/]+)\/receipt\.json$/.exec(path);
    if (match !== null) looks.push(match[1] as string);
  };
  function readdir(path: string, options: { withFileTypes: true }): Dirent[];
  function readdir(path: string): string[];
  function readdir(path: string, options?: { withFileTypes: true }): Dirent[] | string[] {
    if (path.endsWith('/ready')) listings += 1;
    return options === undefined ? realReads.readdir(path) : realReads.readdir(path, options);
  }
  const reads: ReadCalls = {
    ...realReads,
    lstat: (path) => (note(path), realReads.lstat(path)),
    open: (path, flags) => (note(path), realReads.open(path, flags)),
    readdir,
  };
  return { queue: await withSeam(root, { ...nodeFs, reads } as SafeFsSeam), looks, listings: () => listings };
}

many('after the first sweep a wake-up reads only the receipts of jobs whose ready entry is gone; a receipt whose entry a crash left is found by the full sweep', async () => {
  const made = await freshQueue('wait-many');
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) ids.push((await enqueue(made, { argv: ['true'] })).id);
  const { queue, looks, listings } = await watched(made.root);
  const seen: string[] = [];
  const waiting = waitForMany(queue, ids, { unservedNotice: false, pollMs: 20, onReceipt: (receipt) => seen.push(receipt.job_id) });
  await waitFor('two wake-ups guided by ready/ after the first sweep', () => listings() >= 2);
  assert.equal(new Set(looks), new Set(ids), 'the first sweep looked at every job');
  const mark = looks.length;
  await finishJob(made, ids[3] as string);
  await waitFor('the finished job reported', () => seen.length === 1);
  const after = listings();
  await waitFor('two more wake-ups', () => listings() >= after + 2);
  assert.equal(new Set(looks.slice(mark)), new Set([ids[3]]), 'only the job whose entry went was read');
  for (const [i, id] of ids.entries()) if (i !== 3) await finishJob(made, id);
  assert.is((await waiting).receipts.length, 6);

  const [left, other] = [(await enqueue(made, { argv: ['true'] })).id, (await enqueue(made, { argv: ['true'] })).id];
  const crashed = waitForMany(queue, [left, other], { unservedNotice: false, pollMs: 20, fullSweepMs: 300 });
  const now = listings();
  await waitFor('a wake-up guided by ready/', () => listings() > now);
  await writeReceipt(made, left); // published, but its entry stays: a crash before READY-2
  await finishJob(made, other);
  assert.equal((await crashed).receipts.map((receipt) => receipt.job_id), [left, other], 'the full sweep read the receipt ready/ did not tell of');
});

const select = suite('unfinishedJobs: what --all, --lane and --label wait for');
select.after(cleanupAll);

select('the jobs without a receipt now, in enqueue order, matching every field given', async () => {
  const queue = await freshQueue('wait-select');
  const render1 = await enqueue(queue, { argv: ['true'], lane: 'render', labels: { batch: '42' } });
  const other = await enqueue(queue, { argv: ['true'], labels: { batch: '42', team: 'web' } });
  const finished = await enqueue(queue, { argv: ['true'], lane: 'render', labels: { batch: '42' } });
  const render2 = await enqueue(queue, { argv: ['true'], lane: 'render' });
  await writeReceipt(queue, finished.id);
  assert.equal(await unfinishedJobs(queue), [render1.id, other.id, render2.id]);
  assert.equal(await unfinishedJobs(queue, { lane: 'render' }), [render1.id, render2.id]);
  assert.equal(await unfinishedJobs(queue, { labels: { batch: '42' } }), [render1.id, other.id]);
  assert.equal(await unfinishedJobs(queue, { lane: 'render', labels: { batch: '42' } }), [render1.id]);
  assert.equal(await unfinishedJobs(queue, { labels: { batch: '42', team: 'ops' } }), []);
});

many('held and blocked jobs (jobs/<id>.gated) are unfinished: --all and a lane select them, their ids are known, and a wait on one ends when it finishes after its gate opened', async () => {
  const queue = await freshQueue('wait-many');
  const build = await enqueue(queue, { argv: ['true'] });
  const tests = await enqueue(queue, { argv: ['true'], after: [{ job_id: build.id, when: 'succeeded' }], lane: 'ci' });
  const held = await enqueue(queue, { argv: ['true'], hold: true, lane: 'ci' });
  assert.equal(await unfinishedJobs(queue), [build.id, tests.id, held.id], 'a wait on a build and the jobs after it waits for them all');
  assert.equal(await unfinishedJobs(queue, { lane: 'ci' }), [tests.id, held.id], "a gated job's lane is read from jobs/<id>.gated/spec.json");
  const seen: string[] = [];
  const stop = new AbortController();
  const waiting = waitForMany(queue, [tests.id, held.id], { unservedNotice: false, pollMs: 50, signal: stop.signal, onReceipt: (receipt) => seen.push(receipt.job_id) });
  await release(queue, held.id);
  await finishJob(queue, held.id);
  await waitFor('the released job reported', () => seen.length === 1);
  await finishJob(queue, build.id);
  const opened = await unfinishedJobs(queue);
  assert.equal(opened, [tests.id], 'the build finished; the tests remain');
  assert.equal(seen, [held.id]);
  await rejectsWith(waitForMany(queue, [tests.id], { unservedNotice: false, timeoutMs: 0 }), 'TIMEOUT');
  stop.abort(new Error('the test is over'));
  await waiting.then(
    () => assert.unreachable('the tests job never finished'),
    (error: Error) => assert.is(error.message, 'the test is over'),
  );
});

many.run();
select.run();
