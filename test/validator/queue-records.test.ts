/**
 * fsjob validate QUEUE, one job's records against each other (spec/claim.md, spec/running.md, spec/control.md
 * 9): the spec and its stdin, claim generations, what each generation
 * recorded, attempts and I2, the receipt against its claim, its attempts,
 * its outcome and the output files it describes (I4).
 */
import { appendFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { PROTOCOL_VERSION } from '../../src/base/constants.ts';
import { selfIdentity } from '../../src/model/identity.ts';
import { readyEntryName } from '../../src/model/layout.ts';
import type { Queue } from '../../src/model/queue.ts';
import { cleanupAll } from '../support/helpers.ts';
import {
  audit,
  cancel,
  claim,
  codes,
  end,
  enqueue,
  exec,
  expectFinding,
  expectSome,
  finishedJob,
  newQueue,
  only,
  outputSummary,
  receipt,
  state,
} from '../support/validate-queue.ts';

/** Write a record's bytes directly, bypassing encodeRecord: how a broken writer plants one. */
async function plant(queue: Queue, id: string, name: string, value: object): Promise<string> {
  const path = join(queue.paths.job(id), name);
  await writeFile(path, `${JSON.stringify(value)}\n`, { mode: 0o600 });
  return path;
}

const spec = suite('the spec and its stdin (ENQ-5, EXEC-7)');
spec.after(cleanupAll);

spec('a job directory without spec.json is JOB_NO_SPEC', async () => {
  const queue = await newQueue();
  const id = '1764476044123456789-00000000000000aa';
  await mkdir(queue.paths.job(id), { mode: 0o700 });
  await writeFile(join(queue.paths.dir('ready'), readyEntryName(0, id)), '', { mode: 0o600 });
  const result = await audit(queue);
  expectFinding(result, 'JOB_NO_SPEC', { path: join(queue.paths.job(id), 'spec.json'), clause: 'ENQ-5', jobId: id, severity: 'error' });
  assert.equal(codes(result), ['JOB_NO_SPEC']);
});

spec('stdin that differs from the spec, is missing, or is present without one is STDIN_MISMATCH', async () => {
  const queue = await newQueue();
  const changed = (await enqueue(queue, { stdinBytes: Buffer.from('original') })).id;
  await writeFile(join(queue.paths.job(changed), 'stdin'), 'tampered');
  const missing = (await enqueue(queue, { stdinBytes: Buffer.from('x') })).id;
  const { rm } = await import('node:fs/promises');
  await rm(join(queue.paths.job(missing), 'stdin'));
  const extra = (await enqueue(queue)).id;
  await writeFile(join(queue.paths.job(extra), 'stdin'), 'surprise', { mode: 0o600 });
  const result = await audit(queue);
  const found = only(result, 'STDIN_MISMATCH').map((finding) => [finding.job_id, finding.path, finding.clause, finding.field ?? '']);
  assert.equal(found.sort(), [
    [changed, join(queue.paths.job(changed), 'stdin'), 'EXEC-7', '/stdin/sha256'],
    [extra, join(queue.paths.job(extra), 'stdin'), 'EXEC-7', ''],
    [missing, join(queue.paths.job(missing), 'stdin'), 'EXEC-7', ''],
  ].sort());
});

spec.run();

const generations = suite('claim generations and what they recorded (CLAIM-4, CLAIM-5, LAYOUT-5, EXEC-1, EXEC-3, RETRY-1)');
generations.after(cleanupAll);

generations('a retried job (failed, requeued, claimed again, succeeded) and a job cancelled before it ran audit clean', async () => {
  const queue = await newQueue();
  const { id } = await enqueue(queue, { max_attempts: 2 });
  await claim(queue, id, 1);
  await exec(queue, id, 1, { stderr: 'boom\n' });
  await end(queue, id, 1, { reason: 'failed' });
  await claim(queue, id, 2);
  await exec(queue, id, 2, { attempt: 2, stdout: 'ok\n' });
  await receipt(queue, id, 2, { attempts: 2 });
  const cancelled = (await enqueue(queue)).id;
  await cancel(queue, cancelled);
  await claim(queue, cancelled, 1);
  await receipt(queue, cancelled, 1, { outcome: 'cancelled', outputsOf: null });
  const result = await audit(queue);
  assert.equal(result.findings, []);
});

generations('a missing claim generation is CLAIM_GAP', async () => {
  const queue = await newQueue();
  const { id } = await enqueue(queue);
  await claim(queue, id, 1);
  await end(queue, id, 1, { reason: 'released' });
  await claim(queue, id, 3);
  const result = await audit(queue);
  expectFinding(result, 'CLAIM_GAP', { path: join(queue.paths.job(id), 'claim.2.json'), clause: 'CLAIM-5', jobId: id, severity: 'error' });
});

generations('an unfinished job whose claim GEN_MAX ended is CLAIM_LIMIT', async () => {
  const queue = await newQueue();
  const { id } = await enqueue(queue);
  const owner = await selfIdentity();
  const dir = queue.paths.job(id);
  // Generations 1..9999 as well, written directly (no fsync): the job went through every generation.
  for (let gen = 1; gen < 10_000; gen++) {
    await writeFile(join(dir, `claim.${gen}.json`), `${JSON.stringify({ fsjob: PROTOCOL_VERSION, type: 'claim', job_id: id, gen, owner, worker_id: null, claimed_ms: 1, lease_ms: 30_000 })}\n`, { mode: 0o600 });
  }
  await claim(queue, id, 10_000);
  await end(queue, id, 10_000, { reason: 'released' });
  const result = await audit(queue);
  expectFinding(result, 'CLAIM_LIMIT', { path: join(dir, 'end.10000.json'), clause: 'CLAIM-4', jobId: id, severity: 'warning' });
  assert.equal(codes(result), ['CLAIM_LIMIT']);
});

generations('records and outputs of a generation nobody claimed are GEN_WITHOUT_CLAIM', async () => {
  const queue = await newQueue();
  const id = await finishedJob(queue);
  await writeFile(join(queue.paths.job(id), 'stdout.2'), '', { mode: 0o600 });
  const execPath = await plant(queue, id, 'exec.2.json', { fsjob: '1.0', type: 'exec', job_id: id, gen: 2, attempt: 2, group: null, recorded_ms: 1 });
  const result = await audit(queue);
  const found = only(result, 'GEN_WITHOUT_CLAIM').map((finding) => [finding.path, finding.clause]);
  assert.equal(found, [
    [execPath, 'LAYOUT-5'],
    [join(queue.paths.job(id), 'stdout.2'), 'LAYOUT-5'],
  ]);
});

generations('an execution recorded without its output files is EXEC_NO_OUTPUT', async () => {
  const queue = await newQueue();
  const { id } = await enqueue(queue);
  await claim(queue, id, 1);
  await exec(queue, id, 1, { outputs: false });
  const result = await audit(queue);
  expectFinding(result, 'EXEC_NO_OUTPUT', { path: join(queue.paths.job(id), 'exec.1.json'), clause: 'EXEC-1', jobId: id, severity: 'error' });
});

generations('a payload generation has no output files and its receipt says null (PAYLOAD-1); the empty files an older consumer left are accepted too', async () => {
  const queue = await newQueue();
  const bare = (await enqueue(queue, { handler: 'h' })).id;
  await claim(queue, bare, 1);
  await exec(queue, bare, 1, { group: null, outputs: false });
  await receipt(queue, bare, 1, { stdout: null, stderr: null });
  const older = (await enqueue(queue, { handler: 'h' })).id;
  await claim(queue, older, 1);
  await exec(queue, older, 1, { group: null });
  await receipt(queue, older, 1);
  // The same shape for a command job is still an execution that lost its outputs.
  const command = (await enqueue(queue)).id;
  await claim(queue, command, 1);
  await exec(queue, command, 1, { outputs: false });
  await receipt(queue, command, 1, { stdout: null, stderr: null });
  const result = await audit(queue);
  assert.equal(
    result.findings.filter((finding) => finding.severity !== 'info').map((finding) => [finding.code, finding.job_id]).sort(),
    [
      ['EXEC_NO_OUTPUT', command],
      ['RECEIPT_OUTPUT', command],
      ['RECEIPT_OUTPUT', command],
    ],
  );
});

generations('an attempt number that is not attempts-used + 1 is EXEC_ATTEMPT; a state record disagreeing with it is STATE_ATTEMPT', async () => {
  const queue = await newQueue();
  const { id } = await enqueue(queue, { max_attempts: 3 });
  await claim(queue, id, 1);
  await exec(queue, id, 1, { attempt: 2 });
  await state(queue, id, 1, { attempt: 3 });
  const lone = (await enqueue(queue)).id;
  await claim(queue, lone, 1);
  await state(queue, lone, 1, { attempt: 1 });
  const result = await audit(queue);
  expectFinding(result, 'EXEC_ATTEMPT', { path: join(queue.paths.job(id), 'exec.1.json'), clause: 'RETRY-1', jobId: id, field: '/attempt' });
  const states = only(result, 'STATE_ATTEMPT').map((finding) => [finding.path, finding.clause, finding.severity]);
  assert.equal(states.sort(), [
    [join(queue.paths.job(id), 'state.1.json'), 'RETRY-1', 'warning'],
    [join(queue.paths.job(lone), 'state.1.json'), 'RETRY-1', 'warning'],
  ].sort());
});

generations('a command execution without a process group, or a payload execution with one, is EXEC_GROUP', async () => {
  const queue = await newQueue();
  const command = (await enqueue(queue)).id;
  await claim(queue, command, 1);
  await exec(queue, command, 1, { group: null });
  const payload = (await enqueue(queue, { handler: 'resize', payload: { w: 1 } })).id;
  await claim(queue, payload, 1);
  await exec(queue, payload, 1);
  const result = await audit(queue);
  const found = only(result, 'EXEC_GROUP').map((finding) => [finding.path, finding.clause, finding.field]);
  assert.equal(found.sort(), [
    [join(queue.paths.job(command), 'exec.1.json'), 'EXEC-3', '/group'],
    [join(queue.paths.job(payload), 'exec.1.json'), 'EXEC-3', '/group'],
  ].sort());
});

generations('an output over max_output_bytes is OUTPUT_OVER_BOUND', async () => {
  const queue = await newQueue();
  const id = await finishedJob(queue, { max_output_bytes: 4 }, 'more than four bytes\n');
  const result = await audit(queue);
  expectFinding(result, 'OUTPUT_OVER_BOUND', { path: join(queue.paths.job(id), 'stdout.1'), clause: 'EXEC-1', jobId: id, severity: 'error' });
});

generations.run();

const attempts = suite('attempts (RETRY-1, RETRY-2, I2)');
attempts.after(cleanupAll);

attempts('a max_attempts 1 job started by two generations is STARTED_TWICE (I2)', async () => {
  const queue = await newQueue();
  const { id } = await enqueue(queue);
  await claim(queue, id, 1);
  await exec(queue, id, 1);
  await claim(queue, id, 2);
  await exec(queue, id, 2, { attempt: 2 });
  const result = await audit(queue);
  expectFinding(result, 'STARTED_TWICE', { path: queue.paths.job(id), clause: 'RETRY-2', jobId: id, severity: 'error' });
  assert.not.ok(codes(result).includes('ATTEMPTS_EXCEEDED'), 'one finding for one violation');
});

attempts('a preemptible max_attempts 1 job restarted after a preemption is not STARTED_TWICE (PREEMPT-2)', async () => {
  const queue = await newQueue();
  const { id } = await enqueue(queue, { preemptible: true, lane: null });
  await claim(queue, id, 1);
  await exec(queue, id, 1);
  await end(queue, id, 1, { reason: 'preempted' });
  await claim(queue, id, 2);
  await exec(queue, id, 2, { attempt: 1 });
  await receipt(queue, id, 2);
  const result = await audit(queue);
  assert.equal(result.findings, []);
});

attempts('more counted executions than max_attempts is ATTEMPTS_EXCEEDED', async () => {
  const queue = await newQueue();
  const { id } = await enqueue(queue, { max_attempts: 2 });
  for (const gen of [1, 2, 3]) {
    await claim(queue, id, gen);
    await exec(queue, id, gen, { attempt: gen });
    if (gen < 3) await end(queue, id, gen, { reason: 'failed' });
  }
  await receipt(queue, id, 3, { outcome: 'failed', attempts: 3 });
  const result = await audit(queue);
  expectFinding(result, 'ATTEMPTS_EXCEEDED', { path: queue.paths.job(id), clause: 'RETRY-2', jobId: id, severity: 'error' });
});

attempts.run();

const receipts = suite('the receipt (RCPT-3, RCPT-5, RETRY-1, EXEC-10, CANCEL-3, I4)');
receipts.after(cleanupAll);

receipts('a receipt for a generation nobody claimed is RECEIPT_NO_CLAIM; one for a generation that ended is RECEIPT_ENDED_GEN', async () => {
  const queue = await newQueue();
  const unclaimed = (await enqueue(queue)).id;
  await claim(queue, unclaimed, 1);
  await exec(queue, unclaimed, 1);
  await receipt(queue, unclaimed, 2, { outputsOf: 1 });
  const ended = (await enqueue(queue, { max_attempts: 2 })).id;
  await claim(queue, ended, 1);
  await exec(queue, ended, 1);
  await end(queue, ended, 1, { reason: 'failed' });
  await receipt(queue, ended, 1);
  const result = await audit(queue);
  expectFinding(result, 'RECEIPT_NO_CLAIM', { path: join(queue.paths.job(unclaimed), 'receipt.json'), clause: 'RCPT-3', jobId: unclaimed, field: '/gen' });
  expectFinding(result, 'RECEIPT_ENDED_GEN', { path: join(queue.paths.job(ended), 'receipt.json'), clause: 'RCPT-3', jobId: ended, field: '/gen' });
});

receipts('a receipt that finished before it started is RECEIPT_TIME_ORDER, a warning: the writer\'s wall clock went back (LEASE-4)', async () => {
  const queue = await newQueue();
  const { id } = await enqueue(queue);
  await claim(queue, id, 1);
  await exec(queue, id, 1);
  await receipt(queue, id, 1, { started_ms: 1_800_000_000_000, finished_ms: 1_800_000_000_000 - 86_396_000 });
  const result = await audit(queue);
  const found = expectFinding(result, 'RECEIPT_TIME_ORDER', { path: join(queue.paths.job(id), 'receipt.json'), clause: 'LEASE-4', jobId: id, field: '/finished_ms' });
  assert.is(found.severity, 'warning');
  assert.match(found.message, /86396000 ms before its started_ms/);
});

receipts('a receipt whose attempts differ from the exec and end records is RECEIPT_ATTEMPTS', async () => {
  const queue = await newQueue();
  const { id } = await enqueue(queue);
  await claim(queue, id, 1);
  await exec(queue, id, 1);
  await receipt(queue, id, 1, { attempts: 0 });
  const result = await audit(queue);
  expectFinding(result, 'RECEIPT_ATTEMPTS', { path: join(queue.paths.job(id), 'receipt.json'), clause: 'RETRY-1', jobId: id, field: '/attempts' });
});

receipts('outputs changed after the receipt, or described wrongly, are RECEIPT_OUTPUT with the member at fault (I4)', async () => {
  const queue = await newQueue();
  const rewritten = await finishedJob(queue, {}, 'original\n');
  await writeFile(join(queue.paths.job(rewritten), 'stdout.1'), 'replaced\n');
  const grown = await finishedJob(queue);
  await appendFile(join(queue.paths.job(grown), 'stderr.1'), 'late\n');
  const unreported = (await enqueue(queue)).id;
  await claim(queue, unreported, 1);
  await exec(queue, unreported, 1);
  await receipt(queue, unreported, 1, { stdout: null });
  const inconsistent = (await enqueue(queue)).id;
  await claim(queue, inconsistent, 1);
  await exec(queue, inconsistent, 1, { stdout: 'abc' });
  await receipt(queue, inconsistent, 1, { stdout: { ...(await outputSummary(queue, inconsistent, 'stdout', 1)), bytes_total: 10 } });
  const result = await audit(queue);
  const receiptOf = (id: string): string => join(queue.paths.job(id), 'receipt.json');
  const found = only(result, 'RECEIPT_OUTPUT').map((finding) => [finding.path, finding.clause, finding.field]);
  assert.equal(found.sort(), [
    [receiptOf(rewritten), 'RCPT-5', '/stdout/sha256'],
    [receiptOf(grown), 'RCPT-5', '/stderr/bytes_kept'],
    [receiptOf(unreported), 'RCPT-5', '/stdout'],
    [receiptOf(inconsistent), 'RCPT-5', '/stdout/truncated'],
  ].sort());
});

receipts('an outcome whose exit code breaks EXEC-10 is a schema finding citing EXEC-10', async () => {
  const queue = await newQueue();
  const id = await finishedJob(queue);
  const path = join(queue.paths.job(id), 'receipt.json');
  const value = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
  await plant(queue, id, 'receipt.json', { ...value, outcome: 'failed', exit_code: 0 });
  const result = await audit(queue);
  expectSome(result, 'RECORD_SCHEMA', { path, clause: 'EXEC-10', jobId: id });
});

receipts('a cancelled or force_stopped receipt without its cancel record is RECEIPT_CANCEL_UNREQUESTED', async () => {
  const queue = await newQueue();
  const cancelled = (await enqueue(queue)).id;
  await claim(queue, cancelled, 1);
  await receipt(queue, cancelled, 1, { outcome: 'cancelled', outputsOf: null });
  const forced = (await enqueue(queue)).id;
  await cancel(queue, forced, false);
  await claim(queue, forced, 1);
  await exec(queue, forced, 1);
  await receipt(queue, forced, 1, { outcome: 'force_stopped' });
  const result = await audit(queue);
  const found = only(result, 'RECEIPT_CANCEL_UNREQUESTED').map((finding) => [finding.path, finding.clause, finding.severity, finding.field]);
  assert.equal(found.sort(), [
    [join(queue.paths.job(cancelled), 'receipt.json'), 'CANCEL-3', 'warning', '/outcome'],
    [join(queue.paths.job(forced), 'receipt.json'), 'CANCEL-3', 'warning', '/outcome'],
  ].sort());
});

receipts.run();
