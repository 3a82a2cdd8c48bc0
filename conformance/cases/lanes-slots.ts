/**
 * The cases of spec/lanes.md for lane slots (LANE-5, LANE-6): a lane whose
 * jobs declare `lane_slots` N runs N of them at once, never more, each in a
 * slot of its own, slot k's holds in lanes/<sha256(key LF k)>/.
 *
 * consumer/lane-slots forces the overlap with probes held by a gate file
 * and three consumers; consumer/lane-slot-hold-reused forces, with the
 * crash injector's pause, the interleaving that makes a taker of slot 2
 * re-create a hold number below the highest (LANE-2's listing after the
 * link, in a slot above 1).
 */
import { unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PROTOCOL_VERSION } from '../../src/base/constants.ts';
import { ensurePrivateDir, fsyncDir } from '../../src/fs/safefs.ts';
import type { Identity } from '../../src/model/identity.ts';
import { slotHash } from '../../src/model/layout.ts';
import type { HoldRecord } from '../../src/records/codec.ts';
import { type CaseContext, type ConformanceCase, countBy, readStarts } from '../runner/case.ts';
import { claimRecord, deadOwner, receiptRecord } from '../runner/fixtures.ts';
import { checkInvariants, entriesOf, listing } from '../runner/inspect.ts';
import { describeInjectedRun, needsInjector } from '../runner/pause.ts';
import { describeExit, type Spawned } from '../runner/process.ts';
import { freshQueue, plantRecord, reopen, stageJob } from '../runner/stage.ts';
import { logged } from './jobs.ts';
import { startHolder } from './producer-dedupe-race.ts';
import { groupLives, killGroupNow, probe, readProbeLog, waitFor } from './probes.ts';
import { consumerExit } from './running-job.ts';

const LANE = 'render';

/** Three jobs of a two-slot lane and three consumers: two run at once (slots 1 and 2), the third waits; all end once. */
async function laneSlotsCase(ctx: CaseContext): Promise<void> {
  const f = await freshQueue(ctx, 'slots');
  const gate = path.join(f.work, 'gate');
  const jobs: { tag: string; job: Awaited<ReturnType<typeof stageJob>> }[] = [];
  for (const tag of ['s1', 's2', 's3']) jobs.push({ tag, job: await stageJob(f.queue, { argv: probe(f.log, tag, { gate }), cwd: f.work, lane: LANE, lane_slots: 2 }) });
  const consumers: Spawned[] = [1, 2, 3].map(() => ctx.startRole('consume', { queue: f.root }));
  const pids = async (): Promise<number[]> => {
    const log = await readProbeLog(f.log);
    return jobs.map(({ tag }) => log.pid(tag)).filter((pid): pid is number => pid !== undefined);
  };
  try {
    const two = await waitFor(async () => (await pids()).length >= 2, 60_000);
    // One consumer finds both slots held and ends (MANIFEST-4); the other two run their jobs until the gate opens.
    let exited = false;
    await Promise.race([...consumers.map((c) => c.done.then(() => (exited = true))), new Promise((resolve) => setTimeout(resolve, 60_000))]);
    const running = (await pids()).length;
    const during = await ctx.snapshot(f.root);
    const evidence = [`consumer exited: ${String(exited)}`, ...(await readProbeLog(f.log)).lines.map((l) => `log: ${l}`), ...listing(during)];
    ctx.check(running <= 2, ['LANE-5', 'LANE-1'], `jobs of a lane with lane_slots 2 ran ${running} at once: at most 2 may`, evidence);
    ctx.check(two, ['LANE-5'], `three queued jobs of a lane with lane_slots 2 and three consumers: two must run at once (slots 1 and 2); ${running} did`, evidence);
    await writeFile(gate, '');
    for (const consumer of consumers) await consumerExit(ctx, consumer, ['LANE-5']);
    const last = await ctx.role('consume', { queue: f.root });
    const snapshot = await ctx.snapshot(f.root);
    const starts = countBy(await readStarts(f.log));
    const after = [describeExit(last), ...listing(snapshot)];
    for (const { tag, job } of jobs) {
      ctx.check(snapshot.jobs.get(job.id)?.receipt?.outcome === 'succeeded' && starts.get(tag) === 1, ['LANE-5', 'I3'], `${tag} must run once and succeed; receipt ${snapshot.jobs.get(job.id)?.receipt?.outcome ?? 'none'}, ${starts.get(tag) ?? 0} starts`, after);
    }
    const slot2 = await entriesOf(path.join(f.root, 'lanes', slotHash(LANE, 2)));
    ctx.check(slot2.some((entry) => /^[1-9][0-9]*\.json$/.test(entry.name)), ['LANE-6'], `a job of the lane ran in slot 2: its holds belong in lanes/<sha256 of the key, a line feed and 2>/, which holds ${slot2.map((e) => e.name).join(' ') || 'nothing'}`, after);
    for (const failure of await checkInvariants(snapshot, { accepted: jobs.map(({ job }) => job.id), starts, requireReceipts: true })) ctx.failures.push(failure);
  } finally {
    for (const consumer of consumers) consumer.kill();
    for (const pid of await pids()) if (groupLives(pid)) killGroupNow(pid);
  }
}

function laneHold(slot: number, jobId: string, owner: Identity): HoldRecord {
  return { fsjob: PROTOCOL_VERSION, type: 'hold', kind: 'lane', key: LANE, job_id: jobId, gen: 1, owner, created_ms: Date.now(), ...(slot > 1 ? { slot } : {}) };
}

/**
 * Slot 1 is held by a live owner, so the consumer takes slot 2 for a job
 * with lane_slots 2; slot 2's hold 1 names a finished job. The consumer is
 * stopped before its link of slot 2's 2.json; meanwhile 2 and 3 are taken
 * (3 by a live owner) and 2 removed. Its link then takes nothing: it must
 * list again, find slot 2 held, and not run the job (LANE-2 in slot 2, LANE-5).
 */
async function slotHoldReusedCase(ctx: CaseContext): Promise<void> {
  await needsInjector(ctx, 'to stop the taker just before its link of a slot 2 hold');
  const f = await freshQueue(ctx, 'slot-reuse');
  const holder = await startHolder();
  try {
    const dead = await deadOwner();
    const finished = await stageJob(f.queue, { argv: logged(f.log, 'finished'), cwd: f.work, lane: LANE, lane_slots: 2 }, { ready: false });
    await plantRecord(f.queue, finished.dir, 'claim.1.json', 'claim', claimRecord(finished.id, 1, dead));
    await plantRecord(f.queue, finished.dir, 'receipt.json', 'receipt', receiptRecord(finished.id, 1, dead, { outcome: 'cancelled', exit_code: 130, attempts: 0, status: null, started_ms: null, stdout: null, stderr: null }));
    const holders = [];
    for (const tag of ['h1', 'h2']) {
      const job = await stageJob(f.queue, { argv: logged(f.log, tag), cwd: f.work, lane: LANE, lane_slots: 2 }, { ready: false });
      await plantRecord(f.queue, job.dir, 'claim.1.json', 'claim', claimRecord(job.id, 1, holder.owner));
      holders.push(job);
    }
    const dirs = [1, 2].map((slot) => path.join(f.root, 'lanes', slotHash(LANE, slot)));
    for (const dir of dirs) await ensurePrivateDir(dir, f.queue.fsOptions);
    await fsyncDir(path.join(f.root, 'lanes'), f.queue.fsOptions);
    await plantRecord(f.queue, dirs[0] as string, '1.json', 'hold', laneHold(1, (holders[0] as { id: string }).id, holder.owner));
    await plantRecord(f.queue, dirs[1] as string, '1.json', 'hold', laneHold(2, finished.id, dead));
    const waiting = await stageJob(f.queue, { argv: logged(f.log, 'waiting'), cwd: f.work, lane: LANE, lane_slots: 2 });

    const consumer = await ctx.startRolePaused('consume', { queue: f.root }, { op: 'link', path: 'lanes/*/2.json' });
    const linking = await consumer.paused;
    const queue = await reopen(f.root);
    const slot2 = dirs[1] as string;
    if (linking !== undefined) {
      await plantRecord(queue, slot2, '2.json', 'hold', laneHold(2, finished.id, dead));
      await plantRecord(queue, slot2, '3.json', 'hold', laneHold(2, (holders[1] as { id: string }).id, holder.owner));
      await unlink(path.join(slot2, '2.json'));
      await fsyncDir(slot2, queue.fsOptions);
      consumer.resume();
    }
    const result = await consumer.result;
    const snapshot = await ctx.snapshot(f.root);
    const starts = countBy(await readStarts(f.log));
    const numbers = (await entriesOf(slot2)).map((e) => e.name).join(' ');
    const evidence = [describeInjectedRun(result), `holds of slot 2 now: ${numbers || 'none'}`, ...listing(snapshot)];
    if (linking === undefined) {
      ctx.check(false, ['LANE-5', 'LANE-2'], 'slot 1 was held and slot 2 free (its highest hold named a finished job), so the consumer had to take slot 2 by linking its hold 2 (lanes/<sha256 of the key, a line feed and 2>/2.json); it never did', evidence);
      return;
    }
    const ran = (starts.get('waiting') ?? 0) > 0 || (snapshot.jobs.get(waiting.id)?.execs.length ?? 0) > 0;
    ctx.check(!ran, ['LANE-2', 'LANE-5', 'LANE-1'], `the consumer was stopped just before its link of slot 2's hold 2; meanwhile holds 2 and 3 were taken and 2 removed (LANE-3), and hold 3 names a job of a live owner: the link took nothing, so it had to list slot 2 again and find it held; it ran the job (${starts.get('waiting') ?? 0} starts)`, evidence);
    for (const failure of await checkInvariants(snapshot, { accepted: [waiting.id, finished.id] })) ctx.failures.push(failure);
  } finally {
    holder.child.kill('SIGKILL');
    await holder.exited;
  }
}

export const laneSlotsCases: ConformanceCase[] = [
  { name: 'consumer/lane-slots', clauses: ['LANE-5', 'LANE-6', 'LANE-1', 'I3'], level: 'consumer', strength: 'MUST', features: ['lanes', 'slots'], heavy: true, run: laneSlotsCase },
  { name: 'consumer/lane-slot-hold-reused', clauses: ['LANE-2', 'LANE-5', 'LANE-1'], level: 'consumer', strength: 'MUST', features: ['lanes', 'slots'], run: slotHoldReusedCase },
];
