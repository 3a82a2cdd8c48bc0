import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync } from 'node:fs';
import { enqueue, freshQueue } from '../support/enqueue.ts';
import { drain, endOf, fileExists, jobFiles, publishCancel, publishClaim, readJson, receiptOf, serve, waitFor } from '../support/consumer.ts';
import { cleanupAll, rejectsWith } from '../support/helpers.ts';
import { claimNext } from '../../src/consumer/index.ts';
import { selfIdentity } from '../../src/model/identity.ts';
import type { ExecRecord, StateRecord } from '../../src/records/codec.ts';

const handlers = suite('payload handlers (PAYLOAD-1)');
handlers.after(cleanupAll);

handlers("a handler's result is the receipt's result; the exec record has group null", async () => {
  const q = await freshQueue();
  const id = await enqueue(q, { handler: 'add', payload: { a: 2, b: 3 } });
  const seen: number[] = [];
  await drain(q, { commands: false }, (worker) =>
    worker.handle('add', async ({ payload, attempt, spec }) => {
      seen.push(attempt);
      assert.is(spec.id, id);
      const { a, b } = payload as { a: number; b: number };
      return { sum: a + b };
    }),
  );
  const r = receiptOf(q, id);
  assert.is(r.outcome, 'succeeded');
  assert.is(r.exit_code, 0);
  assert.equal(r.result, { sum: 5 });
  assert.equal(seen, [1]);
  assert.is(readJson<ExecRecord>(q.paths.jobFile(id, 'exec.1.json')).group, null);
  // A handler has no streams: no output files, and the receipt says so with null (PAYLOAD-1, RCPT-5).
  assert.equal([r.stdout, r.stderr], [null, null]);
  assert.not.ok(existsSync(q.paths.jobFile(id, 'stdout.1')) || existsSync(q.paths.jobFile(id, 'stderr.1')), 'no output files');
});

handlers('a handler that throws is retried while attempts remain, then fails with exit code 1', async () => {
  const q = await freshQueue();
  const flaky = await enqueue(q, { handler: 'flaky', payload: null, max_attempts: 2 });
  const broken = await enqueue(q, { handler: 'broken', payload: null });
  await drain(q, { commands: false }, (worker) =>
    worker
      .handle('flaky', ({ attempt }) => {
        if (attempt === 1) throw new Error('first try fails');
        return 'second try';
      })
      .handle('broken', () => Promise.reject(new Error('always'))),
  );
  assert.is(endOf(q, flaky, 1).reason, 'failed');
  assert.is(receiptOf(q, flaky).result, 'second try');
  assert.is(receiptOf(q, flaky).attempts, 2);
  const r = receiptOf(q, broken);
  assert.is(r.outcome, 'failed');
  assert.is(r.exit_code, 1);
  assert.match(r.message ?? '', /always/);
});

handlers('cancel and timeout abort the signal; the receipts say cancelled (130) and timed_out (124)', async () => {
  const q = await freshQueue();
  const cancelled = await enqueue(q, { handler: 'wait', payload: null });
  const slow = await enqueue(q, { handler: 'wait', payload: null, timeout_ms: 300, kill_grace_ms: 100 });
  const reasons: unknown[] = [];
  const { worker, done } = serve(q, { commands: false, concurrency: 2 });
  worker.handle('wait', ({ signal }) => new Promise((_, reject) => signal.addEventListener('abort', () => (reasons.push(signal.reason), reject(new Error('aborted'))))));
  await waitFor('cancelled job started', () => fileExists(q.paths.jobFile(cancelled, 'exec.1.json')));
  await publishCancel(q, cancelled, false);
  await waitFor('both receipts', () => fileExists(q.paths.jobFile(cancelled, 'receipt.json')) && fileExists(q.paths.jobFile(slow, 'receipt.json')));
  worker.stop();
  await done;
  assert.equal([...reasons].sort(), ['cancel', 'timeout']);
  assert.is(receiptOf(q, cancelled).outcome, 'cancelled');
  assert.is(receiptOf(q, cancelled).exit_code, 130);
  assert.is(receiptOf(q, slow).outcome, 'timed_out');
  assert.is(receiptOf(q, slow).exit_code, 124);
});

handlers('a payload job whose handler is absent here is skipped, not rejected (CLAIM-2)', async () => {
  const q = await freshQueue();
  const id = await enqueue(q, { handler: 'elsewhere', payload: 1 });
  const { summary } = await drain(q, { commands: false }, (worker) => worker.handle('here', () => null));
  assert.is(summary.claimed, 0);
  assert.equal(jobFiles(q, id), ['spec.json']);
});

handlers.run();

const lowLevel = suite('claimNext and ClaimedJob');
lowLevel.after(cleanupAll);

lowLevel('claimNext hands out a recorded payload job; heartbeat writes progress; complete publishes the receipt', async () => {
  const q = await freshQueue();
  assert.is(await claimNext(q), null);
  await enqueue(q, { argv: ['true'] }); // command jobs are not for claimNext
  const id = await enqueue(q, { handler: 'resize', payload: { w: 10 } });
  const job = await claimNext(q.root, { handlers: ['resize'] });
  assert.ok(job !== null);
  assert.is(job.id, id);
  assert.is(job.attempt, 1);
  assert.equal(job.payload, { w: 10 });
  assert.ok(fileExists(q.paths.jobFile(id, 'exec.1.json')), 'the execution is recorded before the job is handed out');
  await job.heartbeat('half way');
  const state = readJson<StateRecord>(q.paths.jobFile(id, 'state.1.json'));
  assert.is(state.progress, 'half way');
  assert.is(state.phase, 'running');
  const outcome = await job.complete({ result: [1, 2] });
  assert.is(outcome.kind, 'receipt');
  assert.equal(receiptOf(q, id).result, [1, 2]);
  await rejectsWith(job.complete(), 'USAGE');
});

lowLevel('fail() requeues while attempts remain; release() gives the job back uncounted', async () => {
  const q = await freshQueue();
  const id = await enqueue(q, { handler: 'h', payload: null, max_attempts: 2 });
  const first = await claimNext(q);
  await first!.fail(new Error('nope'));
  assert.is(endOf(q, id, 1).counted, true);
  const second = await claimNext(q);
  assert.is(second!.attempt, 2);
  await second!.release();
  assert.is(endOf(q, id, 2).reason, 'released');
  assert.is(endOf(q, id, 2).counted, false);
  const third = await claimNext(q);
  assert.is(third!.attempt, 2);
  await third!.complete();
  assert.is(receiptOf(q, id).attempts, 2);
});

lowLevel('a superseded ClaimedJob is aborted and complete() publishes nothing (OWN-1)', async () => {
  const q = await freshQueue();
  const id = await enqueue(q, { handler: 'h', payload: null });
  const job = await claimNext(q);
  await publishClaim(q, id, 2, await selfIdentity());
  await waitFor('the abort', () => job!.signal.aborted, 5_000);
  assert.is(job!.signal.reason, 'superseded');
  await rejectsWith(job!.complete({ result: 'late' }), 'SUPERSEDED');
  assert.not.ok(fileExists(q.paths.jobFile(id, 'receipt.json')));
  assert.not.ok(readFileSync(q.paths.jobFile(id, 'claim.2.json'), 'utf8') === '');
});

lowLevel.run();
