import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { enqueue, enqueueRaw, freshQueue } from '../support/enqueue.ts';
import { deadIdentity, drain, endOf, fileExists, jobFiles, publishCancel, publishClaim, publishExec, readyEntries, receiptOf, serve, waitFor } from '../support/consumer.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { selfIdentity } from '../../src/model/identity.ts';

const outcomes = suite('receipt outcomes and exit codes (EXEC-10)');
outcomes.after(cleanupAll);

outcomes('exit 0 is succeeded with exit code 0; the ready entry goes (READY-2)', async () => {
  const q = await freshQueue();
  const id = await enqueue(q, { argv: ['sh', '-c', 'printf out; printf err >&2'] });
  await drain(q);
  const r = receiptOf(q, id);
  assert.is(r.outcome, 'succeeded');
  assert.is(r.exit_code, 0);
  assert.is(r.attempts, 1);
  assert.equal(r.status, { exit: 0, signal: null });
  assert.is(r.stdout?.bytes_kept, 3);
  assert.is(readFileSync(q.paths.jobFile(id, 'stdout.1'), 'utf8'), 'out');
  assert.is(readFileSync(q.paths.jobFile(id, 'stderr.1'), 'utf8'), 'err');
  assert.equal(jobFiles(q, id), ['claim.1.json', 'exec.1.json', 'receipt.json', 'spec.json', 'stderr.1', 'stdout.1']);
  assert.equal(readyEntries(q), []);
});

outcomes('exit N is failed with exit code N', async () => {
  const q = await freshQueue();
  const id = await enqueue(q, { argv: ['sh', '-c', 'exit 7'] });
  await drain(q);
  const r = receiptOf(q, id);
  assert.is(r.outcome, 'failed');
  assert.is(r.exit_code, 7);
  assert.equal(r.status, { exit: 7, signal: null });
});

outcomes('a command killed by a signal fsjob did not send fails with 128 + the signal number', async () => {
  const q = await freshQueue();
  const id = await enqueue(q, { argv: ['sh', '-c', 'kill -USR1 $$'] });
  await drain(q);
  const r = receiptOf(q, id);
  assert.is(r.outcome, 'failed');
  assert.is(r.exit_code, 128 + 10);
  assert.equal(r.status, { exit: null, signal: 'SIGUSR1' });
});

outcomes('a command not found exits 127 and one not executable 126 (EXEC-4)', async () => {
  const q = await freshQueue();
  const dir = await freshDir('cmd');
  writeFileSync(join(dir, 'plain'), 'echo hi\n', { mode: 0o644 });
  const missing = await enqueue(q, { argv: ['no-such-command-fsjob'] });
  const plain = await enqueue(q, { argv: [join(dir, 'plain')] });
  await drain(q);
  assert.is(receiptOf(q, missing).exit_code, 127);
  assert.is(receiptOf(q, plain).exit_code, 126);
  assert.is(receiptOf(q, plain).outcome, 'failed');
});

outcomes('timeout: TERM then KILL to the group, timed_out with 124 (EXEC-8)', async () => {
  const q = await freshQueue();
  const id = await enqueue(q, { argv: ['sh', '-c', "trap '' TERM; sleep 30"], timeout_ms: 300, kill_grace_ms: 200 });
  await drain(q);
  const r = receiptOf(q, id);
  assert.is(r.outcome, 'timed_out');
  assert.is(r.exit_code, 124);
  assert.is(r.status?.signal, 'SIGKILL');
});

outcomes('a job past its queue deadline is expired with 124 and never runs', async () => {
  const q = await freshQueue();
  const dir = await freshDir('marker');
  const id = await enqueue(q, { argv: ['touch', join(dir, 'ran')], queue_deadline_ms: 1, created_ms: Date.now() - 5000 });
  await drain(q);
  const r = receiptOf(q, id);
  assert.is(r.outcome, 'expired');
  assert.is(r.exit_code, 124);
  assert.is(r.attempts, 0);
  assert.not.ok(fileExists(join(dir, 'ran')));
  assert.not.ok(jobFiles(q, id).includes('exec.1.json'));
});

outcomes('an attempt that died with its owner and no attempt left is lost with 125 (CLAIM-6.4, RECOV-1)', async () => {
  const q = await freshQueue();
  const id = await enqueue(q, { argv: ['sleep', '100'] });
  const dead = await deadIdentity();
  await publishClaim(q, id, 1, dead);
  await publishExec(q, id, 1, 1, { pgid: dead.pid, start: dead.start, boot_id: dead.boot_id, pid_ns: dead.pid_ns });
  writeFileSync(q.paths.jobFile(id, 'stdout.1'), 'partial', { mode: 0o600 });
  writeFileSync(q.paths.jobFile(id, 'stderr.1'), '', { mode: 0o600 });
  await drain(q);
  const r = receiptOf(q, id);
  assert.is(r.outcome, 'lost');
  assert.is(r.exit_code, 125);
  assert.is(r.reason, 'owner_lost');
  assert.is(r.gen, 2);
  assert.is(r.attempts, 1);
  assert.is(r.stdout?.gen, 1);
  assert.is(r.stdout?.bytes_total, null);
  assert.is(r.stdout?.bytes_kept, 7);
  assert.not.ok(jobFiles(q, id).includes('exec.2.json'), 'max_attempts 1: never started twice');
});

outcomes('a spec that is not a valid record is rejected with 126, reason invalid_spec (CLAIM-6.1, I7)', async () => {
  const q = await freshQueue();
  const garbage = await enqueueRaw(q, '{"this is": "not a spec"}\n');
  const newer = await enqueueRaw(q, '{"fsjob":"2.0","type":"spec"}\n');
  const truncated = await enqueueRaw(q, '{"fsjob":"1.0","type":"sp');
  await drain(q);
  for (const [id, reason] of [[garbage, 'invalid_spec'], [newer, 'unsupported_version'], [truncated, 'invalid_spec']] as const) {
    const r = receiptOf(q, id);
    assert.is(r.outcome, 'rejected');
    assert.is(r.exit_code, 126);
    assert.is(r.reason, reason);
    assert.type(r.message, 'string');
  }
  assert.equal(readyEntries(q), []);
});

outcomes('a command outside the allowlist is rejected not_allowed and never runs (EXEC-9)', async () => {
  const q = await freshQueue();
  const dir = await freshDir('marker');
  const refused = await enqueue(q, { argv: ['/bin/sh', '-c', `touch ${join(dir, 'refused')}`] });
  const allowed = await enqueue(q, { argv: ['/usr/bin/touch', join(dir, 'allowed')] });
  await drain(q, { allow: ['/usr/bin/*'] });
  assert.is(receiptOf(q, refused).outcome, 'rejected');
  assert.is(receiptOf(q, refused).reason, 'not_allowed');
  assert.is(receiptOf(q, refused).exit_code, 126);
  assert.not.ok(fileExists(join(dir, 'refused')));
  assert.is(receiptOf(q, allowed).outcome, 'succeeded');
  assert.ok(fileExists(join(dir, 'allowed')));
});

outcomes("a policy judges the program the consumer's own PATH finds, never the job's PATH or a lookalike path (EXEC-15)", async () => {
  const q = await freshQueue();
  const dir = await freshDir('policy');
  // A job that would run its own "touch" through env.PATH: the policy runs the trusted one.
  const evil = join(dir, 'evil');
  mkdirSync(evil);
  writeFileSync(join(evil, 'touch'), `#!/bin/sh\necho evil > ${join(dir, 'evil-ran')}\n`, { mode: 0o755 });
  const viaPath = await enqueue(q, { argv: ['touch', join(dir, 'trusted-ran')], env: { PATH: evil } });
  const lookalike = await enqueue(q, { argv: [join(evil, 'touch')] });
  const preload = await enqueue(q, { argv: ['touch', join(dir, 'preloaded')], env: { LD_PRELOAD: join(evil, 'x.so') } });
  await drain(q, { allow: ['touch'] });
  assert.is(receiptOf(q, viaPath).outcome, 'succeeded');
  assert.ok(fileExists(join(dir, 'trusted-ran')), "the trusted PATH's touch ran");
  assert.not.ok(fileExists(join(dir, 'evil-ran')), "the job's PATH chose nothing");
  assert.is(receiptOf(q, lookalike).reason, 'not_allowed', 'a pattern without / never matches a path');
  assert.is(receiptOf(q, preload).reason, 'not_allowed', 'a loader variable is refused under a policy');
  assert.not.ok(fileExists(join(dir, 'preloaded')));
});

outcomes('a missing cwd, or one inside the queue as written or resolved, is rejected cwd_unusable (EXEC-5)', async () => {
  const q = await freshQueue();
  const missing = await enqueue(q, { argv: ['true'], cwd: '/nonexistent/fsjob/dir' });
  mkdirSync(join(q.root, 'tmp', 'inside'), { mode: 0o700 });
  const inside = await enqueue(q, { argv: ['true'], cwd: join(q.root, 'tmp', 'inside') });
  // A link inside the queue to a directory outside it: inside as written, outside resolved.
  const outside = await freshDir('outside');
  symlinkSync(outside, join(q.root, 'tmp', 'out-link'));
  const lexical = await enqueue(q, { argv: ['true'], cwd: join(q.root, 'tmp', 'out-link') });
  await drain(q);
  for (const id of [missing, inside, lexical]) {
    assert.is(receiptOf(q, id).outcome, 'rejected');
    assert.is(receiptOf(q, id).reason, 'cwd_unusable');
    assert.not.ok(jobFiles(q, id).includes('exec.1.json'));
  }
});

outcomes('a cancel before the run is cancelled with 130 and nothing runs (CLAIM-6.2)', async () => {
  const q = await freshQueue();
  const dir = await freshDir('marker');
  const id = await enqueue(q, { argv: ['touch', join(dir, 'ran')] });
  await publishCancel(q, id, false);
  await drain(q);
  const r = receiptOf(q, id);
  assert.is(r.outcome, 'cancelled');
  assert.is(r.exit_code, 130);
  assert.is(r.attempts, 0);
  assert.not.ok(fileExists(join(dir, 'ran')));
});

outcomes('a cancel during the run stops the group and is cancelled with 130 (CANCEL-3)', async () => {
  const q = await freshQueue();
  const id = await enqueue(q, { argv: ['sleep', '30'] });
  const { worker, done } = serve(q);
  await waitFor('exec.1.json', () => fileExists(q.paths.jobFile(id, 'exec.1.json')));
  await publishCancel(q, id, false);
  await waitFor('the receipt', () => fileExists(q.paths.jobFile(id, 'receipt.json')), 10_000);
  worker.stop();
  await done;
  const r = receiptOf(q, id);
  assert.is(r.outcome, 'cancelled');
  assert.is(r.exit_code, 130);
  assert.is(r.attempts, 1);
  assert.equal(r.status, { exit: null, signal: 'SIGTERM' });
});

outcomes('cancel-force kills at once: force_stopped with 137 (CANCEL-3)', async () => {
  const q = await freshQueue();
  const id = await enqueue(q, { argv: ['sh', '-c', "trap '' TERM; sleep 30"] });
  const { worker, done } = serve(q);
  await waitFor('exec.1.json', () => fileExists(q.paths.jobFile(id, 'exec.1.json')));
  await publishCancel(q, id, true);
  await waitFor('the receipt', () => fileExists(q.paths.jobFile(id, 'receipt.json')), 10_000);
  worker.stop();
  await done;
  const r = receiptOf(q, id);
  assert.is(r.outcome, 'force_stopped');
  assert.is(r.exit_code, 137);
  assert.is(r.status?.signal, 'SIGKILL');
});

outcomes.run();

const shutdown = suite('graceful shutdown (WORKER-3)');
shutdown.after(cleanupAll);

shutdown('stop(): an attempt left is requeued (end shutdown, counted); the last attempt gets a lost receipt (shutdown)', async () => {
  const q = await freshQueue();
  const again = await enqueue(q, { argv: ['sleep', '30'], max_attempts: 2, kill_grace_ms: 200 });
  const last = await enqueue(q, { argv: ['sleep', '30'], max_attempts: 1, kill_grace_ms: 200 });
  const { worker, done } = serve(q, { concurrency: 2, shutdownGraceMs: 200 });
  await waitFor('both running', () => fileExists(q.paths.jobFile(again, 'exec.1.json')) && fileExists(q.paths.jobFile(last, 'exec.1.json')));
  worker.stop();
  const summary = await done;
  const end = endOf(q, again, 1);
  assert.is(end.reason, 'shutdown');
  assert.is(end.counted, true);
  assert.is(end.status?.signal, 'SIGTERM');
  assert.not.ok(fileExists(q.paths.jobFile(again, 'receipt.json')));
  const r = receiptOf(q, last);
  assert.is(r.outcome, 'lost');
  assert.is(r.reason, 'shutdown');
  assert.is(r.exit_code, 125);
  assert.equal(summary.ended, { shutdown: 1 });
  assert.equal(readyEntries(q).length, 1, 'the requeued job keeps its ready entry');
  assert.equal(statSync(q.paths.dir('workers')).isDirectory(), true);
  assert.equal((await import('node:fs')).readdirSync(q.paths.dir('workers')), [], 'the registration is removed (WORKER-1)');
});

shutdown('a worker registers itself while it serves (WORKER-1)', async () => {
  const q = await freshQueue();
  const { worker, done } = serve(q);
  const name = `${worker.id}.json`;
  await waitFor('the registration', () => fileExists(join(q.paths.dir('workers'), name)));
  const record = JSON.parse(readFileSync(join(q.paths.dir('workers'), name), 'utf8'));
  assert.is(record.worker_id, worker.id);
  assert.is(record.mode, 'serving');
  assert.equal(record.owner, await selfIdentity());
  worker.stop();
  await done;
  assert.not.ok(fileExists(join(q.paths.dir('workers'), name)));
});

shutdown.run();
