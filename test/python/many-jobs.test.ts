/**
 * `python3 -m fsjob` as the reference on several jobs at once and on the
 * refusals that say what to do next (the reference's 4d9106d): a wait
 * --timeout that runs out lists every job still unfinished as the error's
 * job_ids; cancel of several ids cancels or refuses each on its own
 * ({cancelled, refused} under --json, exit status the first refusal's);
 * --lane-slots N>1 with --preemptible is refused under PREEMPT-2 with field
 * /lane_slots; a --dedupe refusal carries the holder's status (job_status).
 * Each case runs both command lines where the queue allows it
 * and asserts exit statuses, codes, members and what is on disk, never
 * wording. Receipts and claims are written by the test (finishJob,
 * writeClaim), so which jobs are finished is decided before the command.
 */
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enqueue } from '../../src/producer/index.ts';
import { initQueue, type Queue } from '../../src/model/queue.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { runFsjob } from '../support/cli.ts';
import { cancelManyJobs, finishJob, writeClaim } from '../support/producer.ts';
import { assertOutputSchema } from '../support/output-schemas.ts';
import { PYTHON, PYTHON_DIR, run, type Run } from './support.ts';

const WATCHDOG_MS = 120_000;
const ENV = { ...process.env, FSJOB_QUEUE: '', PYTHONPATH: PYTHON_DIR };

function py(args: readonly string[], cwd: string): Promise<Run> {
  return run(PYTHON, ['-S', '-m', 'fsjob', ...args], { cwd, env: ENV, watchdogMs: WATCHDOG_MS });
}

interface ErrorJson {
  code: string;
  exit_status: number;
  job_id?: string;
  job_ids?: string[];
  job_status?: string;
  clause?: string;
  field?: string;
}

/** The last line of stdout, the error object of error.schema.json (wait --json prints receipts before it). */
function errorOf(ran: { stdout: string }): ErrorJson {
  const lines = ran.stdout.split('\n').filter((line) => line !== '');
  const last = JSON.parse(lines[lines.length - 1] ?? '{}') as { error: ErrorJson };
  assertOutputSchema('error', last);
  return last.error;
}

async function jobsOf(queue: Queue, count: number, hold = false): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push((await enqueue(queue, { argv: ['true'], ...(hold ? { hold: true } : {}) })).id);
  return ids;
}

const many = suite('python3 -m fsjob on several jobs and refusals as data, as the reference');
many.after(cleanupAll);

many('wait --timeout: job_ids lists every unfinished job, in the order named (--all: enqueue order), as the reference\'s', async () => {
  const dir = await freshDir('fsjob-py-many');
  const queue = await initQueue(join(dir, 'q'));
  const [a, b, c, d, e] = (await jobsOf(queue, 5)) as [string, string, string, string, string];
  await finishJob(queue, b);
  const named = ['wait', '-q', queue.root, '--json', '--timeout', '1ms', d, b, a, e, c];
  const all = ['wait', '-q', queue.root, '--json', '--timeout', '1ms', '--all'];
  const [pyNamed, nodeNamed, pyAll, nodeAll] = [await py(named, dir), await runFsjob(named, { cwd: dir }), await py(all, dir), await runFsjob(all, { cwd: dir })];
  for (const ran of [pyNamed, nodeNamed, pyAll, nodeAll]) assert.is(ran.status, 75, ran.stderr);
  const project = (error: ErrorJson): unknown => [error.code, error.exit_status, error.job_id, error.job_ids];
  assert.equal(project(errorOf(pyNamed)), ['TIMEOUT', 75, d, [d, a, e, c]], 'four unfinished, though the message names three; the finished one not among them');
  assert.equal(project(errorOf(pyNamed)), project(errorOf(nodeNamed)));
  assert.equal(project(errorOf(pyAll)), ['TIMEOUT', 75, a, [a, c, d, e]]);
  assert.equal(project(errorOf(pyAll)), project(errorOf(nodeAll)));
  assert.is(pyNamed.stdout.split('\n').filter((line) => line !== '').length, 2, "the finished job's receipt, then the error");
});

many('cancel of several ids: each cancelled or refused on its own; --json {cancelled, refused}; exit status the first refusal\'s', async () => {
  const dir = await freshDir('fsjob-py-many');
  const queue = await initQueue(join(dir, 'q'));
  const { first, finished, claimed, held: last } = await cancelManyJobs(queue);
  const ran = await py(['cancel', '-q', queue.root, '--json', '--force', first, finished, claimed, last], dir);
  assert.is(ran.status, 1, ran.stderr);
  const report = JSON.parse(ran.stdout) as { cancelled: { id: string; next: string; record: string }[]; refused: { id: string; error: { code: string } }[] };
  assertOutputSchema('cancel', report);
  assert.equal(
    report.cancelled.map((entry) => [entry.id, entry.next, entry.record]),
    [
      [first, 'finished', 'cancel-force.json'],
      [claimed, 'owner', 'cancel-force.json'],
      [last, 'finished', 'cancel-force.json'],
    ],
  );
  assert.equal(report.refused.map((entry) => [entry.id, entry.error.code]), [[finished, 'FINISHED']]);
  assert.ok(existsSync(queue.paths.jobFile(first, 'receipt.json')), 'the unclaimed job before the refusal is finished by CANCEL-2');
  assert.ok(existsSync(queue.paths.jobFile(last, 'receipt.json')), 'so is the held one after it');
  assert.ok(existsSync(queue.paths.jobFile(claimed, 'cancel-force.json')), "the claimed job's request stands for its owner (CANCEL-1)");
  // Without --json, a missing id first: its NOT_FOUND (4) is the exit status, and the job after it is cancelled all the same.
  const [other] = (await jobsOf(queue, 1)) as [string];
  const missing = '1764476044123456789-3fa2c1d09b8e7f64';
  const plain = await py(['cancel', '-q', queue.root, missing, finished, other], dir);
  assert.is(plain.status, 4, plain.stderr);
  assert.ok(existsSync(queue.paths.jobFile(other, 'receipt.json')));
  assert.equal(plain.stdout.split('\n').filter((line) => line !== '').map((line) => line.split(/[ :]/)[0]), [other]);
  // One id alone: the single result, and a refusal is the command's error, as the reference prints them.
  const [alone] = (await jobsOf(queue, 1)) as [string];
  const one = await py(['cancel', '-q', queue.root, '--json', alone], dir);
  assert.is(one.status, 0, one.stderr);
  const result = JSON.parse(one.stdout) as { id: string; next: string };
  assertOutputSchema('cancel', result);
  assert.equal([result.id, result.next], [alone, 'finished']);
  const args = ['cancel', '-q', queue.root, '--json', finished];
  const [pyRefused, nodeRefused] = [await py(args, dir), await runFsjob(args, { cwd: dir })];
  const refusal = (r: Run): unknown => [r.status, errorOf(r).code, errorOf(r).job_id];
  assert.equal(refusal(pyRefused), [1, 'FINISHED', finished]);
  assert.equal(refusal(pyRefused), refusal(nodeRefused));
});

many('--lane-slots above 1 with --preemptible, by options or a request file: USAGE under PREEMPT-2, field /lane_slots, nothing enqueued', async () => {
  const dir = await freshDir('fsjob-py-many');
  const queue = await initQueue(join(dir, 'q'));
  const request = join(dir, 'request.json');
  writeFileSync(request, JSON.stringify({ argv: ['true'], lane: 'L', lane_slots: 3, preemptible: true }));
  const project = (ran: Run): unknown => [ran.status, errorOf(ran).code, errorOf(ran).clause, errorOf(ran).field];
  for (const args of [
    ['enqueue', '-q', queue.root, '--json', '--lane', 'L', '--lane-slots', '2', '--preemptible', '--', 'true'],
    ['enqueue', '-q', queue.root, '--json', '--request', request],
  ]) {
    const [pyRan, nodeRan] = [await py(args, dir), await runFsjob(args, { cwd: dir })];
    assert.equal(project(pyRan), [2, 'USAGE', 'PREEMPT-2', '/lane_slots'], pyRan.stdout);
    assert.equal(project(pyRan), project(nodeRan));
  }
  assert.equal(readdirSync(join(queue.root, 'jobs')), [], 'no job was enqueued');
  // One slot is a preemptible job's own (PREEMPT-2 allows it).
  const accepted = await py(['enqueue', '-q', queue.root, '--lane', 'L', '--lane-slots', '1', '--preemptible', '--', 'true'], dir);
  assert.is(accepted.status, 0, accepted.stderr);
  assert.is(readdirSync(join(queue.root, 'jobs')).length, 1);
});

many('a --dedupe refusal carries the holder\'s status as job_status: held, blocked behind a held one, queued; nothing enqueued', async () => {
  const dir = await freshDir('fsjob-py-many');
  const queue = await initQueue(join(dir, 'q'));
  const held = (await enqueue(queue, { argv: ['true'], hold: true, dedupe: 'held' })).id;
  const blocked = (await enqueue(queue, { argv: ['true'], after: [{ job_id: held, when: 'succeeded' }], dedupe: 'blocked' })).id;
  const queued = (await enqueue(queue, { argv: ['true'], dedupe: 'queued' })).id;
  const before = readdirSync(join(queue.root, 'jobs')).sort();
  const project = (ran: Run): unknown => [ran.status, errorOf(ran).code, errorOf(ran).job_id, errorOf(ran).job_status];
  for (const [key, holder, status] of [
    ['held', held, 'held'],
    ['blocked', blocked, 'blocked'],
    ['queued', queued, 'queued'],
  ] as const) {
    const args = ['enqueue', '-q', queue.root, '--json', '--dedupe', key, '--', 'true'];
    const [pyRan, nodeRan] = [await py(args, dir), await runFsjob(args, { cwd: dir })];
    assert.equal(project(pyRan), [3, 'DEDUPE_HELD', holder, status], pyRan.stdout);
    assert.equal(project(pyRan), project(nodeRan));
  }
  assert.equal(readdirSync(join(queue.root, 'jobs')).sort(), before, 'no job was enqueued');
});

many.run();
