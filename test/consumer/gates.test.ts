/**
 * Gated jobs through the library (spec/gates.md): enqueue with `after` and
 * `hold` publishes at jobs/<id>.gated (GATE-1), a Worker opens the gate once
 * the dependencies are satisfied (AFTER-4, GATE-3) or cancels a job that can
 * never run (AFTER-3), release and cancel act on held jobs (HOLD-2, HOLD-3),
 * gc keeps a dependency of a gated job (GC-3), and a lane with two slots
 * runs two jobs at once (LANE-5, LANE-6); waitFor waits on a gated job.
 */
import { existsSync, readFileSync, readdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { makeContext } from '../../src/consumer/context.ts';
import { lookAtGated } from '../../src/consumer/gates.ts';
import { watchQueue } from '../../src/consumer/queue-watch.ts';
import { ReadyView } from '../../src/consumer/ready-view.ts';
import { readyEntryName, slotHash } from '../../src/model/layout.ts';
import { cancel, enqueue, gc, jobStatus, release, releaseWhere, waitFor } from '../../src/producer/index.ts';
import { drain, waitFor as waitUntil } from '../support/consumer.ts';
import { cleanupAll, freshDir, rejectsWith } from '../support/helpers.ts';
import { freshQueue } from '../support/producer.ts';

const lines = (path: string): string[] => (existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter((line) => line !== '') : []);
const receiptOf = (dir: string): { outcome: string; exit_code: number; message: string | null } => JSON.parse(readFileSync(join(dir, 'receipt.json'), 'utf8'));

const gates = suite('gated jobs (GATE-1, AFTER-*, HOLD-*)');
gates.after(cleanupAll);

gates('a job after a pending one is published gated, blocked, then run after it; one after a failure is cancelled (130) unrun', async () => {
  const queue = await freshQueue();
  const log = join(await freshDir('gates'), 'log');
  const a = await enqueue(queue, { argv: ['sh', '-c', `echo a >> ${log}; exit 3`] });
  const b = await enqueue(queue, { argv: ['sh', '-c', `echo b >> ${log}`], after: [{ job_id: a.id, when: 'finished' }] });
  const c = await enqueue(queue, { argv: ['sh', '-c', `echo c >> ${log}`], after: [{ job_id: a.id }] });
  assert.equal([a.gated, b.gated, c.gated], [false, true, true]);
  assert.ok(existsSync(queue.paths.gatedJob(b.id)) && !existsSync(queue.paths.job(b.id)), 'GATE-1: jobs/<id>.gated');
  assert.ok(readdirSync(queue.paths.dir('ready')).some((name) => name.endsWith(b.id)), 'READY-1: a gated job has its entry');
  assert.is((await jobStatus(queue, b.id)).status, 'blocked');
  assert.equal(c.spec.after, [{ job_id: a.id, when: 'succeeded' }], 'when defaults to succeeded');
  await drain(queue);
  assert.equal(lines(log), ['a', 'b'], 'b ran after a finished; c never ran');
  assert.is(receiptOf(queue.paths.job(b.id)).outcome, 'succeeded');
  const cancelled = receiptOf(queue.paths.job(c.id));
  assert.equal([cancelled.outcome, cancelled.exit_code], ['cancelled', 130]);
  assert.ok(cancelled.message?.includes(a.id), 'AFTER-3: the message names the dependency');
  assert.ok(existsSync(join(queue.paths.job(c.id), 'cancel.json')), 'AFTER-3: a cancel record first');
  await rejectsWith(enqueue(queue, { argv: ['true'], after: [{ job_id: '1764476044123456789-3fa2c1d09b8e7f64' }] }), 'NOT_FOUND');
  await rejectsWith(enqueue(queue, { argv: ['true'], after: [{ job_id: a.id }, { job_id: a.id, when: 'finished' }] }), 'USAGE');
  // A dependency that succeeded already: nothing to wait for, published open.
  const d = await enqueue(queue, { argv: ['true'], after: [{ job_id: b.id }] });
  assert.is(d.gated, false);
});

gates('a worker that found a job blocked runs it once the dependency it watched running succeeds', async () => {
  const queue = await freshQueue();
  const log = join(await freshDir('gates'), 'log');
  const a = await enqueue(queue, { argv: ['sh', '-c', `sleep 0.3; echo a >> ${log}`] });
  const b = await enqueue(queue, { argv: ['sh', '-c', `echo b >> ${log}`], after: [{ job_id: a.id }] });
  // Two slots: the first scan claims a and looks at b while a runs (blocked), a later one opens b's gate.
  await drain(queue, { concurrency: 2 });
  assert.equal(lines(log), ['a', 'b']);
  assert.is(receiptOf(queue.paths.job(b.id)).outcome, 'succeeded');
});

gates('a held job waits (status held) until released; release twice is fine; a job never held is NOT_HELD; cancel while held ends it unrun', async () => {
  const queue = await freshQueue();
  const log = join(await freshDir('gates'), 'log');
  const held = await enqueue(queue, { argv: ['sh', '-c', `echo held >> ${log}`], hold: true, lane: 'nightly' });
  const doomed = await enqueue(queue, { argv: ['sh', '-c', `echo doomed >> ${log}`], hold: true });
  const plain = await enqueue(queue, { argv: ['true'] });
  assert.is((await jobStatus(queue, held.id)).status, 'held');
  await rejectsWith(release(queue, plain.id), 'NOT_HELD');
  await drain(queue);
  assert.equal(lines(log), [], 'HOLD-1: nothing held ran');
  const cancelled = await cancel(queue, doomed.id);
  assert.is(cancelled.next, 'finished', 'HOLD-3: opened and finished by the canceller');
  assert.is(receiptOf(queue.paths.job(doomed.id)).outcome, 'cancelled');
  await rejectsWith(release(queue, plain.id), 'FINISHED');
  const released = await releaseWhere(queue, { lane: 'nightly' });
  assert.equal(released.map((r) => [r.id, r.published, r.next]), [[held.id, true, 'open']]);
  assert.ok(existsSync(join(queue.paths.job(held.id), 'release.json')), 'HOLD-2: release.json, kept when the gate opens');
  assert.equal((await release(queue, held.id)).published, false, 'released already: still a success');
  await drain(queue);
  assert.equal(lines(log), ['held']);
});

gates('waitFor on a gated job waits through its gate opening (no receipt while gated, GATE-2), and gets the receipt at its open name', async () => {
  const queue = await freshQueue();
  const held = await enqueue(queue, { argv: ['true'], hold: true });
  // Gated the whole time: a wait that ends is a timeout, never "the job disappeared".
  await rejectsWith(waitFor(queue, held.id, { timeoutMs: 300, unservedNotice: false }), 'TIMEOUT');
  const waiting = waitFor(queue, held.id, { unservedNotice: false });
  await release(queue, held.id);
  await drain(queue);
  assert.is((await waiting).outcome, 'succeeded');
});

gates('a listener that found a job blocked wakes when the ready entry of its dependency goes (READY-2: after the receipt), not at its next poll', async () => {
  const queue = await freshQueue();
  const other = await enqueue(queue, { argv: ['true'] });
  const dependency = await enqueue(queue, { argv: ['true'] });
  const blocked = await enqueue(queue, { argv: ['true'], after: [{ job_id: dependency.id }] });
  const view = new ReadyView(queue);
  let wakes = 0;
  const watchers = watchQueue(queue, view, () => (wakes += 1));
  try {
    assert.is(await lookAtGated(await makeContext({}, null), queue, blocked.id, view), 'pass');
    // Events come in order: when the dependency's wakes, the other entry's went by without one.
    unlinkSync(join(queue.paths.dir('ready'), readyEntryName(0, other.id)));
    unlinkSync(join(queue.paths.dir('ready'), readyEntryName(0, dependency.id)));
    await waitUntil('the wake-up', () => wakes > 0);
    assert.is(wakes, 1);
  } finally {
    for (const watcher of watchers) watcher.close();
  }
});

gates('gc keeps a finished job a gated job runs after (GC-3)', async () => {
  const queue = await freshQueue();
  const a = await enqueue(queue, { argv: ['true'] });
  await drain(queue);
  const b = await enqueue(queue, { argv: ['true'], hold: true, after: [{ job_id: a.id }] });
  const result = await gc(queue);
  assert.equal(result.jobs, []);
  assert.ok(result.skipped.some((skip) => skip.id === a.id && skip.reason.includes('GC-3')));
  await release(queue, b.id);
  await drain(queue);
  assert.equal((await gc(queue)).jobs.sort(), [a.id, b.id].sort());
});

gates.run();

const slots = suite('lane slots (LANE-5, LANE-6)');
slots.after(cleanupAll);

slots('a lane with two slots runs two of its jobs at once, never three; slot 2 holds in lanes/<sha256(key LF 2)>/', async () => {
  const queue = await freshQueue();
  const dir = await freshDir('slots');
  const log = join(dir, 'log');
  // Each job records how many of the lane run beside it: a counter in the file system, no clock.
  const script = `mkdir ${dir}/running.$$ && echo $(ls -d ${dir}/running.* | wc -l) >> ${log}; sleep 0.3; rmdir ${dir}/running.$$`;
  for (let i = 0; i < 4; i++) await enqueue(queue, { argv: ['sh', '-c', script], lane: 'render', lane_slots: 2 });
  await drain(queue, { concurrency: 4 });
  const counts = lines(log).map(Number);
  assert.is(counts.length, 4);
  assert.ok(Math.max(...counts) <= 2, `at most 2 at once: ${counts.join(' ')}`);
  assert.ok(existsSync(join(queue.paths.dir('lanes'), slotHash('render', 2))), 'slot 2 was used');
});

slots.run();
