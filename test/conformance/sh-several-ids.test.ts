/**
 * `fsjob-sh cancel Q A B C`, `cancel-force Q A B C` and `release Q A B C` as
 * the reference's `fsjob cancel A B C` and `fsjob release A B C`
 * (test/cli/cancel-many.test.ts, src/cli/each-job.ts): each job named is
 * acted on or refused on its own (a job nobody claimed is finished at once
 * by a cancel, with outcome cancelled, CANCEL-2), the exit status is the
 * first refusal's in the order named, an id that is not one refuses the
 * whole command before anything is written, and an id named twice counts
 * once. What the tests assert is on disk: the receipt CANCEL-2 publishes,
 * the cancel request a claimed job's owner acts on, a released job's
 * release record and its open directory, and nothing for a job refused. The
 * queues are set up through the reference's library (fast, in-process);
 * fsjob-sh reads them as any consumer's.
 * Also PREEMPT-2's request rule (spec-record.md: `lane_slots` is 1 when
 * `preemptible`), which makes such a spec invalid, so fsjob-sh's producer
 * refuses the request as the reference's does.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { initQueue, type Queue } from '../../src/model/queue.ts';
import { enqueue } from '../../src/producer/index.ts';
import { FSJOB_BIN } from '../support/cli.ts';
import { runSh as sh, SH_WATCHDOG_MS, shTestDirs } from '../support/fsjob-sh.ts';
import { cancelManyJobs, writeReceipt } from '../support/producer.ts';

const UNKNOWN = '1796126604134694430-d26ea0712362ddd0';

/** The names in a job's directory (jobs/<id> or, while gated, jobs/<id>.gated), sorted. */
function namesOf(queue: Queue, id: string): string[] {
  const open = path.join(queue.root, 'jobs', id);
  return readdirSync(existsSync(open) ? open : `${open}.gated`).sort();
}

/** The outcome of the job's receipt, or undefined without one. */
function outcomeOf(queue: Queue, id: string): string | undefined {
  const file = path.join(queue.root, 'jobs', id, 'receipt.json');
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { outcome: string }).outcome : undefined;
}

function fsjob(...args: string[]): number | null {
  return spawnSync(process.execPath, [FSJOB_BIN, ...args], { encoding: 'utf8', timeout: SH_WATCHDOG_MS }).status;
}

const many = suite('fsjob-sh cancel, cancel-force and release of several ids: each job on its own, as fsjob cancel and fsjob release');
const dir = shTestDirs(many, 'fsjob-sh-cancel-many');

many('cancel-force: a finished job among unclaimed, claimed and held ones; the others are cancelled all the same, exit 1', async () => {
  const queue = await initQueue(path.join(dir(), 'q'));
  // claimed: by this live process, so CANCEL-2 leaves it to its owner, who acts on the request.
  const { first, finished, claimed, held } = await cancelManyJobs(queue);
  const finishedBefore = namesOf(queue, finished);
  const ran = sh('cancel-force', queue.root, first, finished, claimed, held);
  assert.is(ran.status, 1, ran.stderr);
  assert.equal(namesOf(queue, finished), finishedBefore, 'nothing written for the finished job');
  assert.is(outcomeOf(queue, first), 'cancelled', 'the unclaimed job before the refusal is finished by CANCEL-2');
  assert.is(outcomeOf(queue, held), 'cancelled', 'the held job after the refusal is finished by CANCEL-2');
  assert.equal(namesOf(queue, claimed), ['cancel-force.json', 'claim.1.json', 'spec.json'], "the claimed job's request stands for its owner (CANCEL-1)");
  assert.ok(existsSync(path.join(queue.root, 'jobs', held, 'cancel-force.json')), 'cancel-force, not cancel');
});

many('cancel: the first refusal in the order named gives the exit status (no such job: 4, before finished: 1)', async () => {
  const queue = await initQueue(path.join(dir(), 'q'));
  const [finished, job] = [await enqueue(queue, { argv: ['true'] }), await enqueue(queue, { argv: ['true'] })];
  await writeReceipt(queue, finished.id);
  assert.is(sh('cancel', queue.root, UNKNOWN, finished.id, job.id).status, 4);
  assert.is(outcomeOf(queue, job.id), 'cancelled', 'the job after both refusals is cancelled');
  assert.ok(existsSync(path.join(queue.root, 'jobs', job.id, 'cancel.json')));
  const later = await enqueue(queue, { argv: ['true'] });
  assert.is(sh('cancel', queue.root, finished.id, UNKNOWN, later.id).status, 1);
  assert.is(outcomeOf(queue, later.id), 'cancelled');
  // The reference, for the same ids on the same queue.
  const last = await enqueue(queue, { argv: ['true'] });
  assert.is(fsjob('cancel', '-q', queue.root, UNKNOWN, finished.id, last.id), 4);
});

many('an id that is not one among several: exit 2 and nothing written, as fsjob cancel', async () => {
  const queue = await initQueue(path.join(dir(), 'q'));
  const job = await enqueue(queue, { argv: ['true'] });
  for (const command of ['cancel', 'cancel-force']) {
    assert.is(sh(command, queue.root, job.id, '../jobs').status, 2, `fsjob-sh ${command}`);
    assert.equal(namesOf(queue, job.id), ['spec.json'], `fsjob-sh ${command} wrote nothing`);
  }
  assert.is(fsjob('cancel', '-q', queue.root, job.id, '../jobs'), 2);
  assert.equal(namesOf(queue, job.id), ['spec.json']);
});

many('an id named twice counts once (exit 0, not the second time\'s "already finished"); one id alone is as before', async () => {
  const queue = await initQueue(path.join(dir(), 'q'));
  const [twice, alone, finished] = [await enqueue(queue, { argv: ['true'] }), await enqueue(queue, { argv: ['true'] }), await enqueue(queue, { argv: ['true'] })];
  await writeReceipt(queue, finished.id);
  assert.is(sh('cancel', queue.root, twice.id, twice.id).status, 0);
  assert.is(outcomeOf(queue, twice.id), 'cancelled');
  assert.is(sh('cancel', queue.root, alone.id).status, 0);
  assert.is(outcomeOf(queue, alone.id), 'cancelled');
  assert.is(sh('cancel', queue.root, finished.id).status, 1, 'finished: exit 1, as fsjob cancel');
  assert.is(sh('cancel-force', queue.root, UNKNOWN).status, 4, 'no such job: exit 4, as fsjob cancel');
});

many('release of several: each held job released on its own, one never held refused (exit 1), an id that is not one refuses all (2)', async () => {
  const queue = await initQueue(path.join(dir(), 'q'));
  const [held, plain, later] = [await enqueue(queue, { argv: ['true'], hold: true }), await enqueue(queue, { argv: ['true'] }), await enqueue(queue, { argv: ['true'], hold: true })];
  const gated = (id: string): boolean => existsSync(path.join(queue.root, 'jobs', `${id}.gated`));
  assert.is(sh('release', queue.root, held.id, '../jobs').status, 2);
  assert.ok(gated(held.id), 'nothing released before the id that is not one was refused');
  assert.is(sh('release', queue.root, held.id, plain.id, UNKNOWN, later.id).status, 1);
  for (const id of [held.id, later.id]) {
    assert.ok(!gated(id) && namesOf(queue, id).includes('release.json'), 'released: open, with its release record (HOLD-2)');
  }
  assert.equal(namesOf(queue, plain.id), ['spec.json'], 'nothing written for the job never held');
  const other = await enqueue(queue, { argv: ['true'], hold: true });
  assert.is(sh('release', queue.root, UNKNOWN, other.id, plain.id).status, 4, 'no such job first: 4');
  assert.ok(!gated(other.id));
  // The reference, for the same ids.
  assert.is(fsjob('release', '-q', queue.root, held.id, plain.id, UNKNOWN), 1);
});

const preempt = suite('fsjob-sh produce: PREEMPT-2, a preemptible job runs in slot 1 only');
const pdir = shTestDirs(preempt, 'fsjob-sh-preempt2');

preempt('a request with lane_slots 2 and preemptible exits 2 and enqueues nothing, as fsjob enqueue --request', () => {
  const queue = path.join(pdir(), 'q');
  assert.is(sh('init', queue).status, 0);
  const file = path.join(pdir(), 'request.json');
  writeFileSync(file, `${JSON.stringify({ argv: ['true'], cwd: pdir(), lane: 'gpu', lane_slots: 2, preemptible: true })}\n`);
  assert.is(sh('produce', queue, file).status, 2);
  assert.is(fsjob('enqueue', '-q', queue, '--request', file), 2);
  assert.equal(readdirSync(path.join(queue, 'jobs')), [], 'nothing enqueued');
  assert.equal(readdirSync(path.join(queue, 'dedupe')).concat(readdirSync(path.join(queue, 'lanes'))), []);
  // The same request as one slot is enqueued: the refusal is PREEMPT-2's, not the lane's.
  writeFileSync(file, `${JSON.stringify({ argv: ['true'], cwd: pdir(), lane: 'gpu', lane_slots: 1, preemptible: true })}\n`);
  assert.is(sh('produce', queue, file).status, 0);
  assert.is(readdirSync(path.join(queue, 'jobs')).length, 1);
});

many.run();
preempt.run();
