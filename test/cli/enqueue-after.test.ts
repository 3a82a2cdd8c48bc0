/**
 * `fsjob enqueue --after ID` on a dependency that can never be satisfied
 * any more (it finished failed; the job waits for it to succeed) is accepted
 * (AFTER-2 refuses only a job that does not exist) and will be cancelled
 * unrun (AFTER-3): enqueue says so at once, on stderr, naming the
 * dependency; a dependency that is satisfied or pending gets no warning.
 * `fsjob retry` of a job cancelled that way copies its dependencies (AFTER-3
 * cancels the retry too), and says the same.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enqueue } from '../../src/producer/index.ts';
import { initQueue } from '../../src/model/queue.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { runFsjob } from '../support/cli.ts';
import { writeReceipt } from '../support/producer.ts';

const after = suite('fsjob enqueue --after: a dependency that can never be satisfied is warned about');
after.after(cleanupAll);

after('failed dependency: accepted (exit 0, gated) with a warning naming it; :finished and a pending one: no warning', async () => {
  const dir = await freshDir('fsjob-enqueue-after');
  const queue = await initQueue(join(dir, 'q'));
  const failed = await enqueue(queue, { argv: ['false'] });
  await writeReceipt(queue, failed.id, { outcome: 'failed', exit_code: 1, status: { exit: 1, signal: null }, message: 'exited with status 1' });
  const pending = await enqueue(queue, { argv: ['true'] });
  const q = ['-q', queue.root];
  const [doomed, finished, waiting] = await Promise.all([
    runFsjob(['enqueue', ...q, '--after', failed.id, '--', 'true'], { cwd: dir }),
    runFsjob(['enqueue', ...q, '--after', `${failed.id}:finished`, '--', 'true'], { cwd: dir }),
    runFsjob(['enqueue', ...q, '--after', pending.id, '--', 'true'], { cwd: dir }),
  ]);
  assert.is(doomed.status, 0, doomed.stderr);
  assert.ok(existsSync(queue.paths.gatedJob(doomed.stdout.trim())), 'published gated (GATE-1), for a consumer to cancel (AFTER-3)');
  assert.equal(doomed.stderr.split('\n').filter((line) => line.startsWith('fsjob: warning:') && line.includes(failed.id)).length, 1, doomed.stderr);
  assert.equal([finished.status, finished.stderr, waiting.status, waiting.stderr], [0, '', 0, '']);
  const cancelled = doomed.stdout.trim();
  assert.is((await runFsjob(['cancel', ...q, cancelled], { cwd: dir })).status, 0);
  const retried = await runFsjob(['retry', ...q, cancelled], { cwd: dir });
  assert.is(retried.status, 0, retried.stderr);
  assert.ok(existsSync(queue.paths.gatedJob(retried.stdout.trim())), 'the retry keeps the dependency: gated');
  assert.equal(retried.stderr.split('\n').filter((line) => line.startsWith('fsjob: warning:') && line.includes(failed.id)).length, 1, retried.stderr);
});

after.run();
