/**
 * `fsjob release A B C` (pueue's `enqueue 1 2 3`): each job named is
 * released or refused on its own. A refusal of one (never held, finished,
 * no such job) leaves the others released, and says which were, on
 * standard output and under --json; the exit status is the first refusal's.
 * What the test asserts is on disk: release.json in each released job.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enqueue } from '../../src/producer/index.ts';
import { initQueue, type Queue } from '../../src/model/queue.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { runFsjob } from '../support/cli.ts';
import { writeReceipt } from '../support/producer.ts';
import { assertOutputSchema } from '../support/output-schemas.ts';

/** Released (HOLD-2): release.json in the job's directory, open or still gated. */
const released = (queue: Queue, id: string): boolean => existsSync(queue.paths.jobFile(id, 'release.json')) || existsSync(join(queue.paths.gatedJob(id), 'release.json'));

interface ReleaseJson {
  released: { id: string }[];
  refused: { id: string; error: { code: string } }[];
}

const many = suite('fsjob release of several ids: each released or refused on its own');
many.after(cleanupAll);

many('a job never held among held ones: the held ones are released all the same, the refused one is listed, exit 1', async () => {
  const dir = await freshDir('fsjob-release-many');
  const queue = await initQueue(join(dir, 'q'));
  const [first, plain, last] = [await enqueue(queue, { argv: ['true'], hold: true }), await enqueue(queue, { argv: ['true'] }), await enqueue(queue, { argv: ['true'], hold: true })];
  const run = await runFsjob(['release', '-q', queue.root, '--json', first.id, plain.id, last.id], { cwd: dir });
  assert.is(run.status, 1, run.stderr);
  assert.ok(released(queue, first.id) && released(queue, last.id), 'both held jobs released (HOLD-2), the one after the refusal too');
  assert.not.ok(released(queue, plain.id));
  const report = JSON.parse(run.stdout) as ReleaseJson;
  assertOutputSchema('release', report);
  assert.equal(report.released.map((entry) => entry.id), [first.id, last.id]);
  assert.equal(report.refused.map((entry) => [entry.id, entry.error.code]), [[plain.id, 'NOT_HELD']]);
});

many('without --json: a line per released job on stdout; the first refusal in the order named gives the exit status (4: no such job)', async () => {
  const dir = await freshDir('fsjob-release-many');
  const queue = await initQueue(join(dir, 'q'));
  const held = await enqueue(queue, { argv: ['true'], hold: true });
  const finished = await enqueue(queue, { argv: ['true'], hold: true });
  await runFsjob(['cancel', '-q', queue.root, finished.id], { cwd: dir });
  const missing = '1764476044123456789-3fa2c1d09b8e7f64';
  const run = await runFsjob(['release', '-q', queue.root, missing, finished.id, held.id], { cwd: dir });
  assert.is(run.status, 4, run.stderr);
  assert.ok(released(queue, held.id));
  assert.equal(run.stdout.split('\n').filter((line) => line !== '').map((line) => line.split(' ')[0]), [held.id]);
  assert.is(run.stderr.split('\n').filter((line) => line.startsWith('fsjob: ')).length, 2, 'one message per refused job');
});

many('one job named alone and refused: the command fails as before (error.schema.json under --json, NOT_HELD among its codes)', async () => {
  const dir = await freshDir('fsjob-release-many');
  const queue = await initQueue(join(dir, 'q'));
  const plain = await enqueue(queue, { argv: ['true'] });
  const run = await runFsjob(['release', '-q', queue.root, '--json', plain.id], { cwd: dir });
  assert.is(run.status, 1);
  const refusal = JSON.parse(run.stdout) as { error: { code: string } };
  assertOutputSchema('error', refusal);
  assert.is(refusal.error.code, 'NOT_HELD');
});

many('a held job whose dependency failed: released (release.json), still gated for a worker to cancel; no clause id without --verbose', async () => {
  const dir = await freshDir('fsjob-release-many');
  const queue = await initQueue(join(dir, 'q'));
  const failed = await enqueue(queue, { argv: ['false'] });
  await writeReceipt(queue, failed.id, { outcome: 'failed', exit_code: 1, status: { exit: 1, signal: null }, message: 'exited with status 1' });
  const held = await enqueue(queue, { argv: ['true'], hold: true, after: [{ job_id: failed.id, when: 'succeeded' }] });
  const [plain, verbose] = [await runFsjob(['release', '-q', queue.root, held.id], { cwd: dir }), await runFsjob(['release', '-q', queue.root, '--verbose', held.id], { cwd: dir })];
  assert.equal([plain.status, verbose.status], [0, 0], plain.stderr + verbose.stderr);
  assert.ok(existsSync(join(queue.paths.gatedJob(held.id), 'release.json')), 'released (HOLD-2), still gated: no gate opens for it but a cancel (AFTER-3)');
  assert.not.match(plain.stdout, /[A-Z]+-[0-9]+\)/, 'clause ids only with --verbose');
  assert.match(verbose.stdout, /\(AFTER-3\)/);
});

many.run();
