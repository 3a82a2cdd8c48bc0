/**
 * `python3 -m fsjob work --drain` exits 0 when nothing claimable remains,
 * which is not an empty queue: as the reference's 6049361, it counts the
 * held and blocked jobs it leaves (its log line; the Python worker has no
 * --json summary, cli_options.json says why), and the counts are the
 * reference's --json held and blocked on the same queue right after.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enqueue } from '../../src/producer/index.ts';
import { initQueue } from '../../src/model/queue.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { runFsjob } from '../support/cli.ts';
import { assertOutputSchema } from '../support/output-schemas.ts';
import { PYTHON, PYTHON_DIR, run } from './support.ts';

const WATCHDOG_MS = 120_000;
const ENV = { ...process.env, FSJOB_QUEUE: '', PYTHONPATH: PYTHON_DIR };

const left = suite('python3 -m fsjob work --drain counts the held and blocked jobs it leaves, as the reference');
left.after(cleanupAll);

left('--drain: exit 0, the runnable job finished, held 1 and blocked 2 counted as the reference counts them; they stay gated on disk', async () => {
  const dir = await freshDir('fsjob-py-drain-left');
  const queue = await initQueue(join(dir, 'q'));
  // One runnable job, one held, one blocked behind the held one, one blocked behind that.
  const runnable = (await enqueue(queue, { argv: ['true'] })).id;
  const held = (await enqueue(queue, { argv: ['true'], hold: true })).id;
  const middle = (await enqueue(queue, { argv: ['true'], after: [{ job_id: held, when: 'succeeded' }] })).id;
  const last = (await enqueue(queue, { argv: ['true'], after: [{ job_id: middle, when: 'finished' }] })).id;

  const py = await run(PYTHON, ['-S', '-m', 'fsjob', 'work', '--drain', '-q', queue.root], { cwd: dir, env: ENV, watchdogMs: WATCHDOG_MS });
  assert.is(py.status, 0, py.stderr);
  assert.ok(existsSync(join(queue.paths.job(runnable), 'receipt.json')), 'the runnable job finished');
  for (const id of [held, middle, last]) assert.ok(existsSync(queue.paths.gatedJob(id)), `${id} is still gated`);
  // The counts the Python worker reports, beside the reference's on the same queue (nothing claimable is left for it).
  const counted = /(\d+) held\b.*?(\d+) blocked\b/.exec(py.stderr);
  assert.ok(counted !== null, `python3 -m fsjob work --drain counts what it left: ${py.stderr}`);
  const node = await runFsjob(['work', '--drain', '--json', '-q', queue.root], { cwd: dir });
  assert.is(node.status, 0, node.stderr);
  const summary = JSON.parse(node.stdout) as { claimed: number; held: number; blocked: number };
  assertOutputSchema('work', summary);
  assert.equal([summary.claimed, summary.held, summary.blocked], [0, 1, 2]);
  assert.equal([Number(counted[1]), Number(counted[2])], [summary.held, summary.blocked]);
});

left.run();
