/**
 * fsjob validate QUEUE and gated jobs (spec/gates.md): what a gated
 * directory may hold (GATE-2), what an open job's gates say (AFTER-3,
 * HOLD-1), the dependencies a spec may name (AFTER-2), held jobs shown as
 * such, and lane slots (LANE-5, LANE-6).
 */
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { publishRecord } from '../../src/fs/safefs.ts';
import { genRecordName, slotHash } from '../../src/model/layout.ts';
import { selfIdentity } from '../../src/model/identity.ts';
import { encodeRecord } from '../../src/records/codec.ts';
import { claimRecord } from '../../conformance/runner/fixtures.ts';
import { cleanupAll } from '../support/helpers.ts';
import { audit, cancel, claim, codes, enqueue, exec, expectFinding, finishedJob, killChildren, liveGroup, newJobId, newQueue, only, publishHold } from '../support/validate-queue.ts';

const gates = suite('gated jobs (GATE-2, AFTER-2, AFTER-3, HOLD-1)');
gates.after(cleanupAll);

gates('a held gated job audits clean but for JOB_HELD (info), and a gated job waiting for an unfinished dependency is clean', async () => {
  const queue = await newQueue();
  const { id: dependency } = await enqueue(queue);
  const { id: held } = await enqueue(queue, { hold: true });
  await enqueue(queue, { after: [{ job_id: dependency, when: 'succeeded' }] });
  const result = await audit(queue);
  expectFinding(result, 'JOB_HELD', { path: queue.paths.gatedJob(held), clause: 'HOLD-1', jobId: held, severity: 'info' });
  assert.equal(codes(result), ['JOB_HELD']);
});

gates('a claim in a gated directory is GATED_RECORD (error)', async () => {
  const queue = await newQueue();
  const { id } = await enqueue(queue, { hold: true });
  const record = claimRecord(id, 1, await selfIdentity());
  await publishRecord(queue.paths.gatedJob(id), genRecordName('claim', 1), encodeRecord('claim', record), 'link', queue.fsOptions);
  const result = await audit(queue);
  expectFinding(result, 'GATED_RECORD', { path: join(queue.paths.gatedJob(id), 'claim.1.json'), clause: 'GATE-2', jobId: id, severity: 'error' });
});

gates('a gated job without after or hold is GATED_NO_GATE (warning)', async () => {
  const queue = await newQueue();
  const { id } = await enqueue(queue, {}, { gated: true });
  const result = await audit(queue);
  expectFinding(result, 'GATED_NO_GATE', { path: queue.paths.gatedJob(id), clause: 'GATE-1', jobId: id, severity: 'warning' });
});

gates('an open held job without release.json is HOLD_UNRELEASED; with a cancel request it is not', async () => {
  const queue = await newQueue();
  const { id } = await enqueue(queue, { hold: true }, { gated: false });
  const { id: cancelled } = await enqueue(queue, { hold: true }, { gated: false });
  await cancel(queue, cancelled);
  const result = await audit(queue);
  expectFinding(result, 'HOLD_UNRELEASED', { path: queue.paths.job(id), clause: 'HOLD-1', jobId: id, severity: 'error' });
  assert.equal(codes(result), ['HOLD_UNRELEASED']);
});

gates('an open job whose dependency is unfinished, or failed when it needed success, is AFTER_UNSATISFIED', async () => {
  const queue = await newQueue();
  const { id: pending } = await enqueue(queue);
  const failed = await finishedJob(queue);
  const early = (await enqueue(queue, { after: [{ job_id: pending, when: 'finished' }] }, { gated: false })).id;
  const doomed = (await enqueue(queue, { after: [{ job_id: failed, when: 'succeeded' }] }, { gated: false })).id;
  const fine = (await enqueue(queue, { after: [{ job_id: failed, when: 'finished' }] }, { gated: false })).id;
  const result = await audit(queue);
  expectFinding(result, 'AFTER_UNSATISFIED', { path: queue.paths.job(early), clause: 'AFTER-3', jobId: early, severity: 'error', field: '/after' });
  assert.ok(result.findings.every((finding) => finding.job_id !== fine), 'a finished dependency satisfies when: finished');
  // finishedJob succeeds: the job that needed success is satisfied, so only the pending dependency is reported.
  assert.ok(result.findings.every((finding) => finding.job_id !== doomed));
});

gates('after naming the job itself, or one job twice, is AFTER_INVALID', async () => {
  const queue = await newQueue();
  const other = newJobId();
  const { id } = await enqueue(queue, { hold: true, after: [{ job_id: other, when: 'finished' }, { job_id: other, when: 'succeeded' }] });
  const result = await audit(queue);
  expectFinding(result, 'AFTER_INVALID', { path: join(queue.paths.gatedJob(id), 'spec.json'), clause: 'AFTER-2', jobId: id, field: '/after' });
});

gates.run();

const slots = suite('lane slots (LANE-5, LANE-6)');
slots.after(async () => {
  // The running attempts' groups are live sleeps: left alive, they would hold this test process open for 300 s.
  await killChildren();
  await cleanupAll();
});

async function runningInSlot(queue: Awaited<ReturnType<typeof newQueue>>, lane: string, laneSlots: number, slot: number): Promise<string> {
  const { id } = await enqueue(queue, { lane, lane_slots: laneSlots });
  await claim(queue, id, 1);
  const { group } = await liveGroup();
  await exec(queue, id, 1, { group });
  await publishHold(queue, 'lanes', lane, 1, id, 1, undefined, slot);
  return id;
}

slots('two jobs of a two-slot lane running in slots 1 and 2 audit clean; a third in a lane of two slots is LANE_CONFLICT', async () => {
  const queue = await newQueue();
  await runningInSlot(queue, 'render', 2, 1);
  await runningInSlot(queue, 'render', 2, 2);
  assert.equal((await audit(queue)).findings, []);
  const third = await runningInSlot(queue, 'render', 2, 3);
  const result = await audit(queue);
  // Three running where its jobs declare two slots: each is in conflict; the third holds none of its slots.
  assert.is(only(result, 'LANE_CONFLICT').length, 3);
  expectFinding(result, 'LANE_UNHELD', { path: join(queue.paths.dir('lanes'), slotHash('render', 1)), clause: 'LANE-2', jobId: third });
});

slots.run();
