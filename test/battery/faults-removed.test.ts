/**
 * Reliability battery: a directory removed underneath a running `fsjob work`
 * (issue 6; seed 000's abandoned-root check). The worker notices, stops what
 * it ran there, says so and exits with a status, never with a stack trace,
 * and never recreates what was removed (a phantom queue or job).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { enqueue } from '../../src/producer/index.ts';
import { groupState } from '../../src/model/groups.ts';
import type { ExecRecord } from '../../src/records/codec.ts';
import { cleanupAll } from '../support/helpers.ts';
import { receiptOf, waitFor } from '../support/consumer.ts';
import { assertNoCrash, fsjobSpawn, jobIds, queueAndCwd } from '../support/faults.ts';

/** rm -rf that wins against a writer still adding entries (ENOTEMPTY). */
async function removeAll(dir: string): Promise<void> {
  for (let i = 0; existsSync(dir); i++) {
    await rm(dir, { recursive: true, force: true }).catch((error: unknown) => {
      if (i > 50) throw error;
    });
  }
}

async function startedGroup(execPath: string): Promise<NonNullable<ExecRecord['group']>> {
  await waitFor('the command to start', () => existsSync(execPath), 90_000);
  const group = (JSON.parse(readFileSync(execPath, 'utf8')) as ExecRecord).group;
  assert.ok(group !== null);
  return group;
}

const removed = suite('a directory removed underneath a running worker');
removed.after(cleanupAll);

removed('the queue root removed: the worker stops its command, exits 1 naming the queue, and recreates nothing (WORKER-4)', async () => {
  const { queue, cwd } = await queueAndCwd('fsjob-rmroot');
  const job = await enqueue(queue, { argv: ['sleep', '60'] }, { cwd });
  const { done } = fsjobSpawn(['work', '--queue', queue.root, '--lease', '3']);
  const group = await startedGroup(queue.paths.jobFile(job.id, 'exec.1.json'));
  await removeAll(queue.root);
  const run = await done;
  assertNoCrash(run, 'fsjob work');
  assert.is(run.status, 1, `exit status (stderr: ${run.stderr})`);
  assert.match(run.stderr, /was removed while this worker served it/);
  assert.ok(run.stderr.includes(queue.root), 'the message names the queue');
  assert.not.ok(existsSync(queue.root), 'no phantom queue was recreated');
  assert.is(await groupState(group), 'stopped', 'the command of the removed queue was stopped');
});

removed('a job directory removed: its command is fenced (LEASE-2), nothing is recreated, the next job runs', async () => {
  const { queue, cwd } = await queueAndCwd('fsjob-rmjob');
  const doomed = await enqueue(queue, { argv: ['sleep', '60'] }, { cwd });
  const next = await enqueue(queue, { argv: ['true'] }, { cwd });
  const { done } = fsjobSpawn(['work', '--drain', '--queue', queue.root, '--lease', '3']);
  const group = await startedGroup(queue.paths.jobFile(doomed.id, 'exec.1.json'));
  await removeAll(queue.paths.job(doomed.id));
  const run = await done;
  assertNoCrash(run, 'fsjob work');
  assert.is(run.status, 0, `a drain that lost one job still drains the rest (stderr: ${run.stderr})`);
  assert.match(run.stderr, new RegExp(`error on ${doomed.id}`), 'the lost job is reported');
  assert.equal(jobIds(queue), [next.id], 'the removed job was not recreated');
  assert.is(receiptOf(queue, next.id).outcome, 'succeeded');
  assert.is(await groupState(group), 'stopped', 'the command of the removed job was stopped');
});

removed.run();
