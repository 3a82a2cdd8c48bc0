/**
 * consumer/lane-hold-reused (LANE-2, LANE-1) and producer/dedupe-hold-reused
 * (DEDUPE-2, DEDUPE-1): a taker judged hold 1 free and is about to link hold
 * 2. Before its link, others take 2, then 3, and 3's publisher removes 2
 * (LANE-3, DEDUPE-4 let it). The taker's link now succeeds: it re-created a
 * number below the highest, which takes nothing. A taker that does not list
 * once more after its link (1.1) runs its lane job beside the holder of 3,
 * or publishes a second unfinished job for a held key. Seen in the
 * reference's load battery: eight consumers, one lane, two jobs overlapping
 * by 44 ms.
 *
 * The interleaving is forced: the taker runs under the crash injector and
 * stops just before its link of `2.json`; while it is stopped the case does
 * what the other takers would. An implementation that never links `2.json`
 * there does not take keys as LANE-2 / DEDUPE-2 say (hold n + 1 by link).
 */
import { unlink } from 'node:fs/promises';
import path from 'node:path';
import { PROTOCOL_VERSION } from '../../src/base/constants.ts';
import { ensurePrivateDir, fsyncDir } from '../../src/fs/safefs.ts';
import { keyHash } from '../../src/model/layout.ts';
import type { Queue } from '../../src/model/queue.ts';
import type { Identity } from '../../src/model/identity.ts';
import type { HoldRecord } from '../../src/records/codec.ts';
import { type CaseContext, type ConformanceCase, countBy, readStarts } from '../runner/case.ts';
import { claimRecord, deadOwner, receiptRecord } from '../runner/fixtures.ts';
import { checkInvariants, entriesOf, listing } from '../runner/inspect.ts';
import { plantRecord, reopen, stageJob, writeRequest } from '../runner/stage.ts';
import { startHolder } from './producer-dedupe-race.ts';
import { logged } from './jobs.ts';
import { describeInjectedRun, needsInjector } from '../runner/pause.ts';

type Kind = 'lane' | 'dedupe';

function holdPath(root: string, kind: Kind, key: string): string {
  return path.join(root, kind === 'lane' ? 'lanes' : 'dedupe', keyHash(key));
}

function hold(kind: Kind, key: string, jobId: string, owner: Identity): HoldRecord {
  return { fsjob: PROTOCOL_VERSION, type: 'hold', kind, key, job_id: jobId, gen: kind === 'lane' ? 1 : null, owner, created_ms: Date.now() };
}

/** A finished job of the key: its hold is free. */
async function finishedJob(queue: Queue, kind: Kind, key: string, log: string, cwd: string): Promise<string> {
  const dead = await deadOwner();
  const job = await stageJob(queue, { argv: logged(log, 'finished'), cwd, ...(kind === 'lane' ? { lane: key } : { dedupe: key }) }, { ready: false, dedupeHold: false });
  await plantRecord(queue, job.dir, 'claim.1.json', 'claim', claimRecord(job.id, 1, dead));
  // Cancelled before it ran: a receipt without an execution (no outputs, RCPT-5).
  const receipt = receiptRecord(job.id, 1, dead, { outcome: 'cancelled', exit_code: 130, attempts: 0, status: null, started_ms: null, stdout: null, stderr: null });
  await plantRecord(queue, job.dir, 'receipt.json', 'receipt', receipt);
  return job.id;
}

/** Holds of the key, by number, ascending. */
async function holdNumbers(dir: string): Promise<number[]> {
  return (await entriesOf(dir))
    .map((entry) => /^([0-9]+)\.json$/.exec(entry.name)?.[1])
    .filter((n): n is string => n !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
}

/**
 * While the taker is stopped before its link of 2.json: hold 2 (the finished
 * job again), hold 3 (the live holder's job), and 2 removed below 3.
 */
async function takeTwoAndThree(queue: Queue, dir: string, kind: Kind, key: string, finished: string, holderJob: string, holder: Identity): Promise<void> {
  await plantRecord(queue, dir, '2.json', 'hold', hold(kind, key, finished, await deadOwner()));
  await plantRecord(queue, dir, '3.json', 'hold', hold(kind, key, holderJob, holder));
  await unlink(path.join(dir, '2.json'));
  await fsyncDir(dir, queue.fsOptions);
}

/** What both cases start from: a queue whose key has one hold, 1.json, naming a finished job; a live holder process. */
interface Race {
  root: string;
  work: string;
  log: string;
  queue: Queue;
  key: string;
  dir: string;
  finished: string;
  holder: Awaited<ReturnType<typeof startHolder>>;
}

async function prepare(ctx: CaseContext, kind: Kind): Promise<Race> {
  await needsInjector(ctx, `to stop the taker just before its link of the ${kind} hold`);
  const root = await ctx.newQueue(`${kind}-reuse`);
  const work = await ctx.subdir(`${kind}-reuse/work`);
  const log = path.join(work, 'starts.log');
  const queue = await reopen(root);
  const key = 'reused number';
  const finished = await finishedJob(queue, kind, key, log, work);
  const dir = holdPath(root, kind, key);
  await ensurePrivateDir(dir, queue.fsOptions);
  await fsyncDir(path.dirname(dir), queue.fsOptions);
  await plantRecord(queue, dir, '1.json', 'hold', hold(kind, key, finished, await deadOwner()));
  return { root, work, log, queue, key, dir, finished, holder: await startHolder() };
}

async function laneHoldReusedCase(ctx: CaseContext): Promise<void> {
  const { root, work, log, queue, key: lane, dir, finished, holder } = await prepare(ctx, 'lane');
  try {
    // The holder of hold 3: claimed by a live process of this host (its lease fresh), not yet started.
    const running = await stageJob(queue, { argv: logged(log, 'holder'), cwd: work, lane }, { ready: false });
    await plantRecord(queue, running.dir, 'claim.1.json', 'claim', claimRecord(running.id, 1, holder.owner));
    const waiting = await stageJob(queue, { argv: logged(log, 'waiting'), cwd: work, lane });

    const consumer = await ctx.startRolePaused('consume', { queue: root }, { op: 'link', path: 'lanes/*/2.json' });
    const linking = await consumer.paused;
    if (linking !== undefined) {
      await takeTwoAndThree(queue, dir, 'lane', lane, finished, running.id, holder.owner);
      consumer.resume();
    }
    const result = await consumer.result;
    const snapshot = await ctx.snapshot(root);
    const starts = countBy(await readStarts(log));
    const numbers = await holdNumbers(dir);
    const evidence = [describeInjectedRun(result), `holds of the lane now: ${numbers.join(', ') || 'none'}`, ...listing(snapshot, new Set([waiting.id, running.id]))];
    if (linking === undefined) {
      ctx.check(false, ['LANE-2'], `the lane's highest hold (1) named a finished job, so the consumer had to take the lane by linking hold 2 (lanes/<h>/2.json); it never did`, evidence);
      return;
    }
    const ran = (starts.get('waiting') ?? 0) > 0 || (snapshot.jobs.get(waiting.id)?.execs.length ?? 0) > 0;
    ctx.check(
      !ran,
      ['LANE-2', 'LANE-1'],
      `the consumer was stopped just before its link of hold 2; meanwhile holds 2 and 3 were taken and 2 removed below 3 (LANE-3), and hold 3 names a job claimed by a live owner: its link re-created a number below the highest and took nothing, so it had to list once more and find the lane held; it ran the waiting lane job instead (${starts.get('waiting') ?? 0} starts)`,
      evidence,
    );
    ctx.check(numbers.includes(3), ['LANE-3'], `hold 3 is the lane's highest and must never be removed; holds left: ${numbers.join(', ') || 'none'}`, evidence);
    for (const failure of await checkInvariants(snapshot, { accepted: [waiting.id, running.id, finished] })) ctx.failures.push(failure);
  } finally {
    holder.child.kill('SIGKILL');
    await holder.exited;
  }
}

async function dedupeHoldReusedCase(ctx: CaseContext): Promise<void> {
  const { root, work, log, queue, key, dir, finished, holder } = await prepare(ctx, 'dedupe');
  try {
    // The holder of hold 3: a published job of the key without a receipt.
    const unfinished = await stageJob(queue, { argv: logged(log, 'holder'), cwd: work, dedupe: key }, { dedupeHold: false });

    const request = await writeRequest(path.join(ctx.dir, 'requests'), 'reuse', { argv: logged(log, 'rival'), cwd: work, dedupe: key });
    const producer = await ctx.startRolePaused('produce', { queue: root, request }, { op: 'link', path: 'dedupe/*/2.json' });
    const linking = await producer.paused;
    if (linking !== undefined) {
      await takeTwoAndThree(queue, dir, 'dedupe', key, finished, unfinished.id, holder.owner);
      producer.resume();
    }
    const result = await producer.result;
    const snapshot = await ctx.snapshot(root);
    const others = [...snapshot.jobs.keys()].filter((id) => id !== finished && id !== unfinished.id);
    const numbers = await holdNumbers(dir);
    const evidence = [describeInjectedRun(result), `holds of the key now: ${numbers.join(', ') || 'none'}`, ...listing(snapshot)];
    if (linking === undefined) {
      ctx.check(false, ['DEDUPE-2'], `the key's highest hold (1) named a finished job, so the producer had to take the key by linking hold 2 (dedupe/<h>/2.json); it never did (exit ${result.exitCode})`, evidence);
      return;
    }
    ctx.check(
      result.exitCode === 3 && others.length === 0,
      ['DEDUPE-2', 'DEDUPE-1'],
      `the producer was stopped just before its link of hold 2; meanwhile holds 2 and 3 were taken and 2 removed below 3 (DEDUPE-4), and hold 3 names a published unfinished job: its link re-created a number below the highest and took nothing, so it had to list once more and exit 3; exit ${result.exitCode}${others.length === 0 ? '' : `, published ${others.join(' ')}`}`,
      evidence,
    );
    ctx.check(numbers.includes(3), ['DEDUPE-4'], `hold 3 is the key's highest and must never be removed; holds left: ${numbers.join(', ') || 'none'}`, evidence);
  } finally {
    holder.child.kill('SIGKILL');
    await holder.exited;
  }
}

export const holdReuseCases: ConformanceCase[] = [
  { name: 'consumer/lane-hold-reused', clauses: ['LANE-2', 'LANE-1', 'LANE-3'], level: 'consumer', strength: 'MUST', features: ['lanes'], run: laneHoldReusedCase },
  { name: 'producer/dedupe-hold-reused', clauses: ['DEDUPE-2', 'DEDUPE-1', 'DEDUPE-4'], level: 'producer', strength: 'MUST', features: ['dedupe'], run: dedupeHoldReusedCase },
];
