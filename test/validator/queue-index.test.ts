/**
 * fsjob validate QUEUE, across jobs: the ready index against the jobs
 * (READY-1, READY-3), dedupe keys (DEDUPE-1, DEDUPE-2), lanes (LANE-1,
 * LANE-2) and holds that outlive their jobs (LANE-3).
 */
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { keyHash, readyEntryName } from '../../src/model/layout.ts';
import { cleanupAll } from '../support/helpers.ts';
import { audit, claim, codes, enqueue, exec, expectFinding, finishedJob, killChildren, liveGroup, newQueue, only, publishHold, deadIdentity } from '../support/validate-queue.ts';

const ready = suite('the ready index (READY-1, READY-3)');
ready.after(cleanupAll);

ready('an unfinished job without a ready entry is READY_MISSING (warning)', async () => {
  const queue = await newQueue();
  const { id } = await enqueue(queue, { priority: -3 });
  const entry = join(queue.paths.dir('ready'), readyEntryName(-3, id));
  await rm(entry);
  const result = await audit(queue);
  expectFinding(result, 'READY_MISSING', { path: entry, clause: 'READY-1', jobId: id, severity: 'warning' });
  assert.equal(codes(result), ['READY_MISSING']);
});

ready('a ready entry left for a finished job is READY_FINISHED (info)', async () => {
  const queue = await newQueue();
  const id = await finishedJob(queue);
  const entry = join(queue.paths.dir('ready'), readyEntryName(0, id));
  await writeFile(entry, '', { mode: 0o600 });
  const result = await audit(queue);
  expectFinding(result, 'READY_FINISHED', { path: entry, clause: 'READY-3', jobId: id, severity: 'info' });
  assert.equal(codes(result), ['READY_FINISHED']);
});

ready.run();

const dedupe = suite('dedupe keys (DEDUPE-1, DEDUPE-2, LANE-3)');
dedupe.after(cleanupAll);

dedupe('two unfinished jobs with one dedupe key are DEDUPE_CONFLICT, each', async () => {
  const queue = await newQueue();
  const first = (await enqueue(queue, { dedupe: 'nightly' })).id;
  const second = (await enqueue(queue, { dedupe: 'nightly' })).id;
  await finishedJob(queue, { dedupe: 'nightly' });
  const result = await audit(queue);
  const found = only(result, 'DEDUPE_CONFLICT').map((finding) => [finding.job_id, finding.path, finding.clause, finding.severity]);
  assert.equal(found.sort(), [
    [first, queue.paths.job(first), 'DEDUPE-1', 'error'],
    [second, queue.paths.job(second), 'DEDUPE-1', 'error'],
  ].sort());
});

dedupe('an unfinished job whose dedupe hold is gone, or overtaken by another job, is DEDUPE_UNHELD', async () => {
  const queue = await newQueue();
  const lost = (await enqueue(queue, { dedupe: 'a' })).id;
  await rm(join(queue.paths.dir('dedupe'), keyHash('a'), '1.json'));
  const overtaken = (await enqueue(queue, { dedupe: 'b' })).id;
  const thief = await finishedJob(queue);
  await publishHold(queue, 'dedupe', 'b', 2, thief, null);
  const result = await audit(queue);
  const found = only(result, 'DEDUPE_UNHELD').map((finding) => [finding.job_id, finding.path, finding.clause]);
  assert.equal(found.sort(), [
    [lost, join(queue.paths.dir('dedupe'), keyHash('a')), 'DEDUPE-2'],
    [overtaken, join(queue.paths.dir('dedupe'), keyHash('b'), '2.json'), 'DEDUPE-2'],
  ].sort());
});

dedupe('the highest hold of a key whose job was collected is HOLD_JOB_MISSING (info); lower holds and staged jobs are not', async () => {
  const queue = await newQueue();
  await finishedJob(queue, { dedupe: 'k' });
  const collected = await finishedJob(queue, { dedupe: 'k' });
  await rm(queue.paths.job(collected), { recursive: true });
  const staged = '1764476044123456789-00000000000000ab';
  const { mkdir } = await import('node:fs/promises');
  await mkdir(queue.paths.staging(staged), { mode: 0o700 });
  await publishHold(queue, 'dedupe', 'staged', 1, staged, null);
  const result = await audit(queue);
  expectFinding(result, 'HOLD_JOB_MISSING', { path: join(queue.paths.dir('dedupe'), keyHash('k'), '2.json'), clause: 'LANE-3', severity: 'info' });
  assert.equal(codes(result), ['HOLD_JOB_MISSING']);
});

dedupe.run();

const lanes = suite('lanes (LANE-1, LANE-2)');
lanes.after(async () => {
  await killChildren();
  await cleanupAll();
});

/** A job of `lane` claimed (generation 1) with an execution recorded for `group`. */
async function runningInLane(queue: Awaited<ReturnType<typeof newQueue>>, lane: string, take: boolean, owner?: Awaited<ReturnType<typeof deadIdentity>>) {
  const { id } = await enqueue(queue, { lane });
  await claim(queue, id, 1, owner === undefined ? {} : { owner });
  const { group } = await liveGroup();
  await exec(queue, id, 1, { group });
  if (take) {
    const { highestHold } = await import('../support/validate-queue.ts');
    await publishHold(queue, 'lanes', lane, (await highestHold(queue, 'lanes', lane)) + 1, id, 1);
  }
  return id;
}

lanes('one running job holding its lane audits clean', async () => {
  const queue = await newQueue();
  await runningInLane(queue, 'deploy', true);
  const result = await audit(queue);
  assert.equal(result.findings, []);
});

lanes('two jobs running in one lane are LANE_CONFLICT, each, even when one is an orphan whose command still runs', async () => {
  const queue = await newQueue();
  const live = await runningInLane(queue, 'deploy', true);
  const orphan = await runningInLane(queue, 'deploy', true, await deadIdentity());
  const result = await audit(queue);
  const found = only(result, 'LANE_CONFLICT').map((finding) => [finding.job_id, finding.path, finding.clause, finding.severity]);
  assert.equal(found.sort(), [
    [live, join(queue.paths.job(live), 'exec.1.json'), 'LANE-1', 'error'],
    [orphan, join(queue.paths.job(orphan), 'exec.1.json'), 'LANE-1', 'error'],
  ].sort());
});

lanes('a running job without the highest hold of its lane is LANE_UNHELD', async () => {
  const queue = await newQueue();
  const unheld = await runningInLane(queue, 'a', false);
  const overtaken = await runningInLane(queue, 'b', true);
  const other = await finishedJob(queue, { lane: 'b' });
  await publishHold(queue, 'lanes', 'b', 2, other, 1);
  const result = await audit(queue);
  const found = only(result, 'LANE_UNHELD').map((finding) => [finding.job_id, finding.path, finding.clause]);
  assert.equal(found.sort(), [
    [overtaken, join(queue.paths.dir('lanes'), keyHash('b'), '2.json'), 'LANE-2'],
    [unheld, join(queue.paths.dir('lanes'), keyHash('a')), 'LANE-2'],
  ].sort());
});

lanes.run();
