import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { enqueue, freshQueue } from '../support/enqueue.ts';
import { drain, endOf, fileExists, receiptOf, serve, waitFor } from '../support/consumer.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';

const lines = (path: string): string[] => (fileExists(path) ? readFileSync(path, 'utf8').split('\n').filter((line) => line !== '') : []);

const order = suite('priority and FIFO (CLAIM-1, CLAIM-2)');
order.after(cleanupAll);

order('one consumer runs higher priority first, then enqueue order', async () => {
  const q = await freshQueue();
  const dir = await freshDir('order');
  const log = join(dir, 'log');
  const job = (name: string, priority: number) => enqueue(q, { argv: ['sh', '-c', `echo ${name} >> ${log}`], priority });
  await job('low-1', -5);
  await job('mid-1', 0);
  await job('high-1', 10);
  await job('mid-2', 0);
  await job('high-2', 10);
  await job('low-2', -5);
  await job('top', 1000);
  await drain(q);
  assert.equal(lines(log), ['top', 'high-1', 'high-2', 'mid-1', 'mid-2', 'low-1', 'low-2']);
});

order('several queues are served round-robin, one claim per turn (seed 004)', async () => {
  const a = await freshQueue('fsjob-qa');
  const b = await freshQueue('fsjob-qb');
  const dir = await freshDir('order');
  const log = join(dir, 'log');
  for (let i = 1; i <= 3; i++) await enqueue(a, { argv: ['sh', '-c', `echo a${i} >> ${log}`] });
  for (let i = 1; i <= 2; i++) await enqueue(b, { argv: ['sh', '-c', `echo b${i} >> ${log}`] });
  await drain(a, { queues: [a, b] });
  assert.equal(lines(log), ['a1', 'b1', 'a2', 'b2', 'a3']);
});

order.run();

const lanes = suite('lanes (LANE-1, LANE-2, LANE-4)');
lanes.after(cleanupAll);

lanes('two jobs of one lane never overlap, even with free slots', async () => {
  const q = await freshQueue();
  const dir = await freshDir('lane');
  const log = join(dir, 'log');
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) {
    ids.push(await enqueue(q, { argv: ['sh', '-c', `echo start $FSJOB_JOB_ID >> ${log}; sleep 0.2; echo end $FSJOB_JOB_ID >> ${log}`], lane: 'site' }));
  }
  const other = await enqueue(q, { argv: ['sh', '-c', `echo other >> ${join(dir, 'other')}`], lane: 'elsewhere' });
  await drain(q, { concurrency: 4 });
  const seen = lines(log);
  assert.is(seen.length, 8);
  for (let i = 0; i < seen.length; i += 2) {
    const start = seen[i]?.split(' ');
    const end = seen[i + 1]?.split(' ');
    assert.is(start?.[0], 'start', `line ${i}: ${seen.join(' | ')}`);
    assert.is(end?.[0], 'end');
    assert.is(start?.[1], end?.[1], 'each start is followed by the end of the same job');
  }
  for (const id of [...ids, other]) assert.is(receiptOf(q, id).outcome, 'succeeded');
});

lanes.run();

const preempt = suite('preemption (PREEMPT-1, PREEMPT-2)');
preempt.after(cleanupAll);

preempt('a preemptible job is stopped for a waiting non-preemptible job of its lane, uncounted, and runs again after it', async () => {
  const q = await freshQueue();
  const dir = await freshDir('preempt');
  const log = join(dir, 'log');
  const marker = join(dir, 'first-run');
  const script = `echo p-start >> ${log}; if [ -e ${marker} ]; then echo p-done >> ${log}; exit 0; fi; touch ${marker}; exec sleep 30`;
  const p = await enqueue(q, { argv: ['sh', '-c', script], lane: 'gpu', preemptible: true, kill_grace_ms: 200 });
  const { worker, done } = serve(q, { concurrency: 2 });
  await waitFor('the preemptible job runs', () => fileExists(q.paths.jobFile(p, 'exec.1.json')));
  const n = await enqueue(q, { argv: ['sh', '-c', `echo n >> ${log}`], lane: 'gpu' });
  await waitFor('both receipts', () => fileExists(q.paths.jobFile(p, 'receipt.json')) && fileExists(q.paths.jobFile(n, 'receipt.json')), 15_000);
  worker.stop();
  await done;
  const end = endOf(q, p, 1);
  assert.is(end.reason, 'preempted');
  assert.is(end.counted, false);
  assert.equal(lines(log), ['p-start', 'n', 'p-start', 'p-done']);
  const r = receiptOf(q, p);
  assert.is(r.outcome, 'succeeded');
  assert.is(r.attempts, 1, 'a preempted run does not use an attempt');
  assert.is(receiptOf(q, n).outcome, 'succeeded');
});

preempt('a preemptible job is not claimed while a non-preemptible job of its lane waits', async () => {
  const q = await freshQueue();
  const dir = await freshDir('preempt');
  const log = join(dir, 'log');
  // The preemptible job comes first in FIFO order, yet the waiting non-preemptible one runs first.
  await enqueue(q, { argv: ['sh', '-c', `echo p >> ${log}`], lane: 'l', preemptible: true });
  await enqueue(q, { argv: ['sh', '-c', `echo n >> ${log}`], lane: 'l' });
  await drain(q);
  assert.equal(lines(log), ['n', 'p']);
});

preempt.run();

const retries = suite('retries (RETRY-1, RETRY-2, RETRY-3)');
retries.after(cleanupAll);

retries('a command that fails twice succeeds on the third attempt; each failure is an end record', async () => {
  const q = await freshQueue();
  const dir = await freshDir('retry');
  const count = join(dir, 'count');
  const script = `n=$(cat ${count} 2>/dev/null || echo 0); n=$((n+1)); echo $n > ${count}; echo "attempt $FSJOB_ATTEMPT"; [ $n -ge 3 ]`;
  const id = await enqueue(q, { argv: ['sh', '-c', script], max_attempts: 3, retry_delay_ms: 100 });
  const { summary } = await drain(q);
  const r = receiptOf(q, id);
  assert.is(r.outcome, 'succeeded');
  assert.is(r.attempts, 3);
  assert.is(r.gen, 3);
  for (const gen of [1, 2]) {
    const end = endOf(q, id, gen);
    assert.is(end.reason, 'failed');
    assert.is(end.counted, true);
    assert.equal(end.status, { exit: 1, signal: null });
    const next = JSON.parse(readFileSync(q.paths.jobFile(id, `claim.${gen + 1}.json`), 'utf8'));
    assert.is(end.retry_at_ms, end.ended_ms + 100, 'retry_at_ms is retry_delay_ms after the end');
    assert.ok(next.claimed_ms >= end.retry_at_ms, 'the retry is not claimed before retry_at_ms');
  }
  assert.is(readFileSync(q.paths.jobFile(id, 'stdout.3'), 'utf8'), 'attempt 3\n');
  assert.equal(summary.ended, { failed: 2 });
});

retries('max_attempts 1 never starts twice: a failure is the receipt', async () => {
  const q = await freshQueue();
  const dir = await freshDir('retry');
  const log = join(dir, 'log');
  const id = await enqueue(q, { argv: ['sh', '-c', `echo ran >> ${log}; exit 2`], max_attempts: 1 });
  await drain(q);
  await drain(q);
  assert.equal(lines(log), ['ran']);
  const r = receiptOf(q, id);
  assert.is(r.outcome, 'failed');
  assert.is(r.attempts, 1);
});

retries('the last failed attempt reports failed with its exit code', async () => {
  const q = await freshQueue();
  const id = await enqueue(q, { argv: ['sh', '-c', 'exit 4'], max_attempts: 2 });
  await drain(q);
  const r = receiptOf(q, id);
  assert.is(r.outcome, 'failed');
  assert.is(r.exit_code, 4);
  assert.is(r.attempts, 2);
  assert.is(endOf(q, id, 1).reason, 'failed');
});

retries.run();
