/**
 * `fsjob work --drain` (and --once) exits 0 when nothing claimable remains,
 * which is not an empty queue: held jobs wait for fsjob release, blocked
 * ones for a dependency. Its summary counts both, read once at the end
 * (--json: held, blocked), so a user draining a queue is not told it is
 * empty; a serve-mode worker, stopped on purpose, reports neither.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enqueue } from '../../src/producer/index.ts';
import { initQueue, type Queue } from '../../src/model/queue.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { runFsjob, startFsjob } from '../support/cli.ts';
import { assertOutputSchema } from '../support/output-schemas.ts';

interface WorkJson {
  claimed: number;
  finished: Record<string, number>;
  held?: number;
  blocked?: number;
}

/** One runnable job, one held, one blocked behind the held one, one blocked behind that (two held chains would count the same). */
async function gatedQueue(name: string): Promise<{ queue: Queue; dir: string; held: string; blocked: string[] }> {
  const dir = await freshDir(name);
  const queue = await initQueue(join(dir, 'q'));
  await enqueue(queue, { argv: ['true'] });
  const held = (await enqueue(queue, { argv: ['true'], hold: true })).id;
  const middle = (await enqueue(queue, { argv: ['true'], after: [{ job_id: held, when: 'succeeded' }] })).id;
  const last = (await enqueue(queue, { argv: ['true'], after: [{ job_id: middle, when: 'finished' }] })).id;
  return { queue, dir, held, blocked: [middle, last] };
}

const left = suite('fsjob work --drain counts the held and blocked jobs it leaves');
left.after(cleanupAll);

left('--drain --json: exit 0, held 1 and blocked 2 beside the finished job; they are still gated on disk', async () => {
  const { queue, dir, held, blocked } = await gatedQueue('fsjob-drain-left');
  const run = await runFsjob(['work', '--drain', '--json', '-q', queue.root], { cwd: dir });
  assert.is(run.status, 0, run.stderr);
  const summary = JSON.parse(run.stdout) as WorkJson;
  assertOutputSchema('work', summary);
  assert.equal([summary.claimed, summary.finished, summary.held, summary.blocked], [1, { succeeded: 1 }, 1, 2]);
  for (const id of [held, ...blocked]) assert.ok(existsSync(queue.paths.gatedJob(id)), `${id} is still gated`);
});

left('--once and a plain drain of an empty queue: held and blocked are there, 0 when none is left', async () => {
  const { queue, dir } = await gatedQueue('fsjob-once-left');
  const once = await runFsjob(['work', '--once', '--json', '-q', queue.root], { cwd: dir });
  assert.is(once.status, 0, once.stderr);
  const summary = JSON.parse(once.stdout) as WorkJson;
  assertOutputSchema('work', summary);
  assert.equal([summary.claimed, summary.held, summary.blocked], [1, 1, 2]);
  const emptyDir = await freshDir('fsjob-drain-empty');
  const empty = await initQueue(join(emptyDir, 'q'));
  const drained = await runFsjob(['work', '--drain', '--json', '-q', empty.root], { cwd: emptyDir });
  assert.is(drained.status, 0, drained.stderr);
  const none = JSON.parse(drained.stdout) as WorkJson;
  assertOutputSchema('work', none);
  assert.equal([none.claimed, none.held, none.blocked], [0, 0, 0]);
});

left('serve mode, stopped by SIGTERM once its job finished: no held or blocked member', async () => {
  const { queue, dir } = await gatedQueue('fsjob-serve-left');
  const run = startFsjob(['work', '--json', '-q', queue.root], { cwd: dir });
  try {
    await run.waitForStderr('"type":"finished"', 'the runnable job finished');
  } finally {
    run.child.kill('SIGTERM');
  }
  const done = await run.result;
  assert.is(done.status, 0, done.stderr);
  const summary = JSON.parse(done.stdout) as WorkJson;
  assertOutputSchema('work', summary);
  assert.equal([summary.claimed, 'held' in summary, 'blocked' in summary], [1, false, false]);
});

left.run();
