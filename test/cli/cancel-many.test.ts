/**
 * `fsjob cancel A B C` (pueue's `kill 1 2 3`): each job named is cancelled
 * or refused on its own. A refusal of one (finished already, no such job)
 * leaves the others cancelled, and says which were, under --json as
 * {cancelled, refused}; the exit status is the first refusal's. One id
 * alone prints what it printed before. What the test asserts is on disk:
 * the receipt CANCEL-2 publishes for a job nobody claimed, and the cancel
 * request of a claimed one.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enqueue } from '../../src/producer/index.ts';
import { initQueue, type Queue } from '../../src/model/queue.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { runFsjob } from '../support/cli.ts';
import { cancelManyJobs, writeReceipt } from '../support/producer.ts';
import { assertOutputSchema } from '../support/output-schemas.ts';

/** Finished by this cancel (CANCEL-2): its receipt says cancelled. */
const cancelledNow = (queue: Queue, id: string): boolean => existsSync(queue.paths.jobFile(id, 'receipt.json'));

interface CancelManyJson {
  cancelled: { id: string; record: string; next: string }[];
  refused: { id: string; error: { code: string } }[];
}

const many = suite('fsjob cancel of several ids: each cancelled or refused on its own');
many.after(cleanupAll);

many('a finished job among unclaimed and claimed ones: the others are cancelled all the same, the finished one is listed, exit 1', async () => {
  const dir = await freshDir('fsjob-cancel-many');
  const queue = await initQueue(join(dir, 'q'));
  const { first, finished, claimed, held: last } = await cancelManyJobs(queue);
  const run = await runFsjob(['cancel', '-q', queue.root, '--json', '--force', first, finished, claimed, last], { cwd: dir });
  assert.is(run.status, 1, run.stderr);
  const report = JSON.parse(run.stdout) as CancelManyJson;
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
  assert.ok(cancelledNow(queue, first) && cancelledNow(queue, last), 'the unclaimed jobs before and after the refusal are finished by CANCEL-2');
  assert.ok(existsSync(queue.paths.jobFile(claimed, 'cancel-force.json')), "the claimed job's request stands for its owner (CANCEL-1)");
});

many('without --json: a line per cancelled job on stdout, a message per refusal on stderr; the first refusal in the order named gives the exit status (4)', async () => {
  const dir = await freshDir('fsjob-cancel-many');
  const queue = await initQueue(join(dir, 'q'));
  const [a, finished] = [await enqueue(queue, { argv: ['true'] }), await enqueue(queue, { argv: ['true'] })];
  await writeReceipt(queue, finished.id);
  const missing = '1764476044123456789-3fa2c1d09b8e7f64';
  const run = await runFsjob(['cancel', '-q', queue.root, missing, finished.id, a.id], { cwd: dir });
  assert.is(run.status, 4, run.stderr);
  assert.ok(cancelledNow(queue, a.id));
  assert.equal(run.stdout.split('\n').filter((line) => line !== '').map((line) => line.split(/[ :]/)[0]), [a.id]);
  assert.is(run.stderr.split('\n').filter((line) => line.startsWith('fsjob: ')).length, 2, 'one message per refused job');
});

many('one id alone: the single result as before (no cancelled/refused wrapper), and a refusal is the command\'s error', async () => {
  const dir = await freshDir('fsjob-cancel-many');
  const queue = await initQueue(join(dir, 'q'));
  const [job, finished] = [await enqueue(queue, { argv: ['true'] }), await enqueue(queue, { argv: ['true'] })];
  await writeReceipt(queue, finished.id);
  const [one, refused] = await Promise.all([
    runFsjob(['cancel', '-q', queue.root, '--json', job.id], { cwd: dir }),
    runFsjob(['cancel', '-q', queue.root, '--json', finished.id], { cwd: dir }),
  ]);
  assert.equal([one.status, refused.status], [0, 1], one.stderr + refused.stderr);
  const result = JSON.parse(one.stdout) as { id: string; next: string };
  assertOutputSchema('cancel', result);
  assert.equal([result.id, result.next], [job.id, 'finished']);
  const error = JSON.parse(refused.stdout) as { error: { code: string; job_id: string } };
  assertOutputSchema('error', error);
  assert.equal([error.error.code, error.error.job_id], ['FINISHED', finished.id]);
});

many.run();
