/**
 * `fsjob wait` on many jobs through the real CLI: ids piped from `fsjob
 * enqueue` (`-`), --all, --lane and --label, one line (or one JSON receipt)
 * per job as it finishes, and the exit status that sums them up. Receipts
 * are written straight by the test (finishJob: the receipt, then the ready
 * entry removed, READY-2), so each job finishes exactly when the test says,
 * never by luck of timing.
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enqueue } from '../../src/producer/index.ts';
import { initQueue } from '../../src/model/queue.ts';
import type { ReceiptRecord } from '../../src/records/codec.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { FSJOB_ARGV, runFsjob, startFsjob } from '../support/cli.ts';
import { finishJob, writeReceipt } from '../support/producer.ts';
import { waitFor } from '../support/consumer.ts';

const failed = (code: number): Partial<ReceiptRecord> => ({ outcome: 'failed', exit_code: code, status: { exit: code, signal: null }, message: `exited with status ${code}` });
const jobIds = (text: string): string[] => text.split('\n').filter((line) => line !== '').map((line) => (JSON.parse(line) as ReceiptRecord).job_id);

const waitMany = suite('fsjob wait on many: ids from stdin, --all, --lane, --label; one line per job; one exit status');
waitMany.after(cleanupAll);

waitMany('enqueue | wait -: waits for exactly the jobs enqueued, one JSON receipt per line as each finishes', async () => {
  const dir = await freshDir('fsjob-wait-many');
  const queue = await initQueue(join(dir, 'q'));
  const older = await enqueue(queue, { argv: ['true'] }); // unfinished, but not piped: not waited for
  const fsjob = FSJOB_ARGV.map((word) => `'${word}'`).join(' ');
  const pipe = `{ ${fsjob} enqueue -q q -- true && ${fsjob} enqueue -q q --json -- false; } | ${fsjob} wait -q q --json -`;
  const child = spawn('sh', ['-c', pipe], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => void (stdout += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  const ids = await waitFor('both jobs published', () => {
    const names = readdirSync(queue.paths.dir('jobs')).filter((name) => name !== older.id).sort();
    return names.length === 2 ? names : undefined;
  });
  const [first, second] = ids as [string, string];
  await finishJob(queue, second, failed(7));
  await waitFor('the second reported first', () => stdout.includes(second));
  assert.equal(jobIds(stdout), [second], 'reported as it finished; the first still waits');
  await finishJob(queue, first);
  assert.is(await exited, 7, 'the exit code of the job that did not succeed');
  assert.equal(jobIds(stdout), [second, first]);
});

waitMany('--all, --lane, --label: the jobs unfinished at the start; exit 0 only when all succeeded; usage errors', async () => {
  const dir = await freshDir('fsjob-wait-many');
  const queue = await initQueue(join(dir, 'q'));
  const done = await enqueue(queue, { argv: ['false'], lane: 'render' });
  await writeReceipt(queue, done.id, failed(1)); // finished before the wait: not its answer
  const a = await enqueue(queue, { argv: ['true'], lane: 'render', labels: { batch: '42' } });
  const b = await enqueue(queue, { argv: ['true'], labels: { batch: '42' } });
  const c = await enqueue(queue, { argv: ['true'] });
  const q = ['-q', queue.root];
  const all = startFsjob(['wait', ...q, '--all'], { cwd: dir });
  const lane = startFsjob(['wait', ...q, '--lane', 'render', '--json'], { cwd: dir });
  const label = startFsjob(['wait', ...q, '--label', 'batch=42', '--json'], { cwd: dir });
  const both = startFsjob(['wait', ...q, '--lane', 'render', '--label', 'batch=7'], { cwd: dir });
  const usage = await Promise.all([
    runFsjob(['wait', ...q], { cwd: dir }),
    runFsjob(['wait', ...q, '--all', '--lane', 'render'], { cwd: dir }),
    runFsjob(['wait', ...q, '--all', a.id], { cwd: dir }),
  ]);
  assert.equal(usage.map((run) => run.status), [2, 2, 2]);
  const none = await both.result;
  assert.equal([none.status, none.stderr], [0, 'fsjob: no job to wait for (no unfinished job matches)\n']);
  // Each wait says, while it waits, that no worker serves the queue: past that line it has chosen its jobs.
  for (const started of [all, lane, label]) await started.waitForStderr('no live worker serves');
  await finishJob(queue, c.id);
  await finishJob(queue, b.id, failed(3));
  await finishJob(queue, a.id);
  const [allRun, laneRun, labelRun] = await Promise.all([all.result, lane.result, label.result]);
  assert.is(laneRun.status, 0, laneRun.stderr);
  assert.equal(jobIds(laneRun.stdout), [a.id], 'the lane: a only (done finished before)');
  assert.is(labelRun.status, 3, 'b failed with 3');
  assert.equal(jobIds(labelRun.stdout).sort(), [a.id, b.id].sort());
  assert.is(allRun.status, 3, allRun.stderr);
  assert.equal(allRun.stdout.split('\n').filter((line) => line !== '').sort(), [`${a.id} succeeded (exit code 0)`, `${b.id} failed (exit code 3): exited with status 3`, `${c.id} succeeded (exit code 0)`].sort());
});

waitMany.run();
