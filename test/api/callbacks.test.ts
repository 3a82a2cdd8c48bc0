/**
 * A caller's callback that fails, as a service developer writes one: the
 * types of onResult, onReceipt, onProgress and unservedNotice return void, so
 * an async function compiles. One that rejected was an unhandled rejection,
 * which ends a Node 20 process; now it fails the call as a throw does
 * (src/base/callbacks.ts). Each case runs the same failure three ways (a
 * throw, a promise already rejected, one rejected a turn later) and asserts
 * the same: the call rejects with that very error, the process sees no
 * unhandled rejection, and the queue holds what the throw leaves (jobs whole
 * or gone, never half-written).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { recover } from '../../src/consumer/index.ts';
import { BATCH_WINDOW } from '../../src/producer/many.ts';
import { enqueueBatch, enqueueMany, gc, listJobs, waitFor, waitForMany, type Queue } from '../../src/producer/index.ts';
import { deferred } from '../../src/base/deferred.ts';
import { cleanupAll, withWatchdog } from '../support/helpers.ts';
import { deadIdentity, finishJob, freshQueue, tree, writeClaim } from '../support/producer.ts';
import { fileExists } from '../support/consumer.ts';

type Way = 'throws' | 'rejects' | 'rejects a turn later';
const WAYS: Way[] = ['throws', 'rejects', 'rejects a turn later'];

/** What a callback that fails `way` returns (or throws). */
function fail(way: Way, error: Error): Promise<never> {
  if (way === 'throws') throw error;
  if (way === 'rejects') return Promise.reject(error);
  return new Promise((_, reject) => setImmediate(() => reject(error)));
}

/** `work()`'s rejection, asserted to be `error` itself, with no unhandled rejection in the process meanwhile. */
async function rejectsWithItself(work: () => Promise<unknown>, error: Error, way: Way): Promise<void> {
  const unhandled: unknown[] = [];
  const listener = (reason: unknown): void => void unhandled.push(reason);
  process.on('unhandledRejection', listener);
  let outcome: { resolved: unknown } | { rejected: unknown };
  try {
    try {
      outcome = { resolved: await withWatchdog(30_000, work()) };
    } catch (rejected) {
      outcome = { rejected };
    }
    // An unhandled rejection is reported after the microtasks of its turn; a late one a turn later.
    for (let turn = 0; turn < 3; turn += 1) await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('unhandledRejection', listener);
  }
  assert.equal(unhandled, [], `${way}: no unhandled rejection`);
  assert.ok('rejected' in outcome, `${way}: the call rejects (it resolved)`);
  assert.is((outcome as { rejected: unknown }).rejected, error, `${way}: with the callback's own error`);
}

/** The job directories of jobs/, each asserted whole (its spec.json is there). */
async function wholeJobs(queue: Queue): Promise<string[]> {
  const ids = (await readdir(queue.paths.dir('jobs'))).filter((name) => !name.startsWith('.')).sort();
  for (const id of ids) assert.ok(fileExists(join(queue.paths.dir('jobs'), id, 'spec.json')), `${id} has its spec`);
  return ids;
}

const callbacks = suite('a callback that throws or rejects fails the call');
callbacks.after(cleanupAll);

/** The two entry points that report results one by one, each failing at its third result. */
const PIPELINES: Record<string, (queue: Queue, onResult: (id: string | undefined, third: boolean) => unknown) => Promise<unknown>> = {
  enqueueMany: (queue, onResult) =>
    enqueueMany(
      queue,
      Array.from({ length: 3 * BATCH_WINDOW }, () => ({ handler: 'h' })),
      { onResult: (result) => onResult('id' in result ? result.id : undefined, result.index === 2) },
    ),
  enqueueBatch: (queue, onResult) =>
    enqueueBatch(
      queue,
      Array.from({ length: 3 * BATCH_WINDOW }, () => '{"handler":"h"}'),
      { onResult: (result) => onResult('id' in result ? result.id : undefined, result.line === 3) },
    ),
};

for (const [name, pipeline] of Object.entries(PIPELINES)) {
  callbacks(`${name} onResult: the call rejects, takes no more requests, and every job on disk was reported`, async () => {
    for (const way of WAYS) {
      const queue = await freshQueue('fsjob-api-callbacks');
      const error = new Error(`onResult ${way}`);
      const reported: string[] = [];
      const onResult = (id: string | undefined, third: boolean): unknown => {
        if (id !== undefined) reported.push(id);
        return third ? fail(way, error) : undefined;
      };
      await rejectsWithItself(() => pipeline(queue, onResult), error, way);
      // A job published but never reported would be one its producer cannot name.
      assert.equal(await wholeJobs(queue), [...reported].sort(), `${way}: the jobs on disk are those reported`);
      assert.ok(reported.length >= 3, `${way}: the jobs before the failure stay enqueued`);
      if (way !== 'rejects a turn later') assert.ok(reported.length <= 3 + BATCH_WINDOW + 1, `${way}: no request is taken after the failure is seen (${reported.length})`);
    }
  });
}

callbacks('enqueueMany onResult: a promise that rejects after the last result still fails the call, which waits for it', async () => {
  const queue = await freshQueue('fsjob-api-callbacks');
  const error = new Error('rejected after the last result');
  const gate = deferred<void>();
  const all = deferred<void>();
  const reported: string[] = [];
  await rejectsWithItself(
    async () => {
      const call = enqueueMany(queue, [{ handler: 'h' }, { handler: 'h' }, { handler: 'h' }], {
        onResult: (result) => {
          if ('id' in result) reported.push(result.id);
          if (reported.length === 3) all.resolve();
          return gate.promise;
        },
      });
      void call.catch(() => undefined); // awaited below, after the gate
      await all.promise;
      gate.reject(error);
      return call;
    },
    error,
    'rejects a turn later',
  );
  assert.equal(await wholeJobs(queue), [...reported].sort());
  assert.is(reported.length, 3);
});

callbacks('waitForMany onReceipt: the call rejects without waiting for the jobs still unfinished, and writes nothing', async () => {
  for (const way of WAYS) {
    const queue = await freshQueue('fsjob-api-callbacks');
    const made = await enqueueMany(queue, [{ handler: 'h' }, { handler: 'h' }]);
    const ids = made.map((result) => ('id' in result ? result.id : ''));
    await finishJob(queue, ids[0] as string);
    const before = await tree(queue.root);
    const error = new Error(`onReceipt ${way}`);
    // The second job never finishes: only the failure can end this wait before its timeout.
    await rejectsWithItself(() => waitForMany(queue, ids, { pollMs: 10, timeoutMs: 20_000, unservedNotice: false, onReceipt: () => fail(way, error) }), error, way);
    assert.equal(await tree(queue.root), before, `${way}: nothing written`);
  }
});

callbacks('listJobs onProgress: the call rejects, and writes nothing', async () => {
  for (const way of WAYS) {
    const queue = await freshQueue('fsjob-api-callbacks');
    await enqueueMany(queue, [{ handler: 'h' }, { handler: 'h' }, { handler: 'h' }]);
    const before = await tree(queue.root);
    const error = new Error(`onProgress ${way}`);
    await rejectsWithItself(() => listJobs(queue, { onProgress: (done) => (done === 1 ? fail(way, error) : undefined) }), error, way);
    assert.equal(await tree(queue.root), before, `${way}: nothing written`);
  }
});

callbacks('gc onProgress: the call rejects; a failure while examining removes nothing, one while removing stops before the next job', async () => {
  for (const phase of ['examining', 'removing'] as const) {
    for (const way of WAYS) {
      const queue = await freshQueue('fsjob-api-callbacks');
      const made = await enqueueMany(queue, [{ handler: 'h' }, { handler: 'h' }, { handler: 'h' }, { handler: 'h' }]);
      const ids = made.map((result) => ('id' in result ? result.id : ''));
      // Oldest finished first: gc removes in this order.
      for (const [index, id] of ids.entries()) await finishJob(queue, id, { finished_ms: 1_000_000 + index });
      const error = new Error(`gc onProgress ${phase} ${way}`);
      await rejectsWithItself(() => gc(queue, { onProgress: (progress) => (progress.phase === phase && progress.done === 1 ? fail(way, error) : undefined) }), error, way);
      const left = await wholeJobs(queue);
      for (const id of left) assert.ok(fileExists(join(queue.paths.job(id), 'receipt.json')), `${phase} ${way}: ${id} kept whole`);
      const removed = ids.length - left.length;
      if (phase === 'examining') assert.is(removed, 0, `${way}: nothing removed while examining`);
      // The throw stops before the second job; a rejection is seen once the step in hand (that job's removal) is done,
      // one a turn later when it comes (the order and wholeness above hold however late).
      else assert.ok(way === 'throws' ? removed === 1 : way === 'rejects' ? removed >= 1 && removed <= 2 : removed >= 1, `${way}: ${removed} removed`);
      assert.equal(left, ids.slice(removed), `${phase} ${way}: the oldest went first`);
    }
  }
});

callbacks('recover onProgress: the call rejects; the jobs recovered before stay recovered, the others untouched', async () => {
  for (const way of WAYS) {
    const queue = await freshQueue('fsjob-api-callbacks');
    const made = await enqueueMany(queue, [{ handler: 'h' }, { handler: 'h' }, { handler: 'h' }]);
    const ids = made.map((result) => ('id' in result ? result.id : ''));
    // Orphans: claimed by a process that has exited, never started: recover gives each back.
    const dead = await deadIdentity();
    for (const id of ids) await writeClaim(queue, id, 1, dead);
    const error = new Error(`recover onProgress ${way}`);
    await rejectsWithItself(() => recover(queue, { onProgress: (done) => (done === 1 ? fail(way, error) : undefined) }), error, way);
    const recovered = [];
    for (const id of ids) {
      const names = (await readdir(queue.paths.job(id))).filter((name) => name !== 'spec.json').sort();
      if (names.length > 1) recovered.push(id);
      else assert.equal(names, ['claim.1.json'], `${way}: ${id} untouched`);
    }
    assert.ok(way === 'throws' ? recovered.length === 1 : way === 'rejects' ? recovered.length >= 1 && recovered.length <= 2 : recovered.length >= 1, `${way}: ${recovered.length} recovered`);
  }
});

callbacks('waitFor unservedNotice: a notice that rejects is ignored as one that throws (advice only), and the wait ends with the receipt', async () => {
  const queue = await freshQueue('fsjob-api-callbacks');
  const [made] = await enqueueMany(queue, [{ handler: 'h' }]);
  const id = made !== undefined && 'id' in made ? made.id : '';
  const noticed = deferred<void>();
  const unhandled: unknown[] = [];
  const listener = (reason: unknown): void => void unhandled.push(reason);
  process.on('unhandledRejection', listener);
  try {
    // Nobody serves the queue: the notice comes (after its first look, 1.5 s), rejects, and the wait goes on.
    const waiting = waitFor(queue, id, { pollMs: 10, unservedNotice: () => (noticed.resolve(), Promise.reject(new Error('the notice failed'))) });
    await withWatchdog(30_000, noticed.promise);
    await new Promise((resolve) => setImmediate(resolve));
    await finishJob(queue, id);
    const receipt = await withWatchdog(30_000, waiting);
    assert.is(receipt.job_id, id);
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('unhandledRejection', listener);
  }
  assert.equal(unhandled, []);
});

callbacks.run();
