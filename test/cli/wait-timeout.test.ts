/**
 * `fsjob wait --timeout` that runs out (exit 75) tells a script which jobs
 * are still unfinished: the error's job_ids lists every one, in the order
 * waited for, whatever the message shows (a few, "and N more"). Jobs that
 * finished before the timeout are not in it. Receipts are written by the
 * test (finishJob), so which jobs are finished is decided before the wait.
 */
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enqueue } from '../../src/producer/index.ts';
import { initQueue } from '../../src/model/queue.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { runFsjob } from '../support/cli.ts';
import { finishJob } from '../support/producer.ts';
import { assertOutputSchema } from '../support/output-schemas.ts';

interface ErrorLine {
  error: { code: string; exit_status: number; job_id?: string; job_ids?: string[] };
}

/** The last line of wait --json: the error object when the wait failed (wait.schema.json). */
function errorLine(stdout: string): ErrorLine {
  const lines = stdout.split('\n').filter((line) => line !== '');
  const last = JSON.parse(lines[lines.length - 1] ?? '{}') as ErrorLine;
  assertOutputSchema('error', last);
  return last;
}

const timeout = suite('fsjob wait --timeout: every job still unfinished, as data');
timeout.after(cleanupAll);

timeout('--all with more unfinished jobs than the message names: job_ids lists each, in enqueue order; a finished one is not among them', async () => {
  const dir = await freshDir('fsjob-wait-timeout');
  const queue = await initQueue(join(dir, 'q'));
  const jobs = [];
  for (let i = 0; i < 6; i++) jobs.push((await enqueue(queue, { argv: ['true'] })).id);
  const run = await runFsjob(['wait', '-q', queue.root, '--json', '--timeout', '1ms', '--all'], { cwd: dir });
  assert.is(run.status, 75, run.stderr);
  const { error } = errorLine(run.stdout);
  assert.is(error.code, 'TIMEOUT');
  assert.is(error.exit_status, 75);
  assert.equal(error.job_ids, jobs, 'all six, though the message names three');
  assert.is(error.job_id, jobs[0]);
});

timeout('ids named (some finished already): job_ids are the unfinished ones in the order named; one id alone: [that id]', async () => {
  const dir = await freshDir('fsjob-wait-timeout');
  const queue = await initQueue(join(dir, 'q'));
  const [a, b, c, d] = [await enqueue(queue, { argv: ['true'] }), await enqueue(queue, { argv: ['true'] }), await enqueue(queue, { argv: ['true'] }), await enqueue(queue, { argv: ['true'] })].map((job) => job.id) as [
    string,
    string,
    string,
    string,
  ];
  await finishJob(queue, b);
  const [many, one] = await Promise.all([
    runFsjob(['wait', '-q', queue.root, '--json', '--timeout', '1ms', d, b, a, c], { cwd: dir }),
    runFsjob(['wait', '-q', queue.root, '--json', '--timeout', '1ms', c], { cwd: dir }),
  ]);
  assert.equal([many.status, one.status], [75, 75], many.stderr + one.stderr);
  const lines = many.stdout.split('\n').filter((line) => line !== '');
  assert.is(lines.length, 2, 'the finished job reported, then the error');
  assert.equal(errorLine(many.stdout).error.job_ids, [d, a, c]);
  assert.equal(errorLine(one.stdout).error.job_ids, [c]);
});

timeout.run();
