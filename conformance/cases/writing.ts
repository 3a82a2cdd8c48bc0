/**
 * The cases of spec/writing.md (moving directories: writing-moves.ts; the
 * persistence model: power.ts). What the filesystem must provide (FS-1..FS-3), with the
 * filesystem's answers forced by the crash injector (FaultPoint):
 *
 * - producer/init-probe (FS-2): init on a filesystem whose rename() cannot
 *   replace a file (sshfs without the server's posix-rename extension) must
 *   refuse: init itself links and never renames over, so only a probe sees it,
 *   and a queue created there fails at its first heartbeat;
 * - consumer/link-refused (FS-2): a claim link refused with EPERM (no hard
 *   links) is the filesystem's lack, not a lost race: the consumer reports it
 *   (exits non-zero) and nothing runs;
 * - consumer/retransmitted-link and producer/retransmitted-link (FS-3): a
 *   link that happened but answered EEXIST, as a network client hears after
 *   retransmitting a request whose reply was lost, is the writer's own record:
 *   the consumer runs the job it claimed, the producer keeps the dedupe key it
 *   took;
 * - consumer/receipt-refused (RCPT-7): every link of receipt.json fails with
 *   EIO (a disk that refuses that one write while the others still work):
 *   the attempt's outcome exists only in its owner, which may try again for
 *   up to lease_ms but must never run the command again meanwhile; the claim
 *   stays open for RECOV-1. The job has attempts to spare, so an owner that
 *   turns the failure into a retry runs it again.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { type CaseContext, type ConformanceCase, countBy, readStarts } from '../runner/case.ts';
import { listing } from '../runner/inspect.ts';
import { reopen, stageJob, writeRequest } from '../runner/stage.ts';
import { describeInjectedRun, needsInjector } from '../runner/pause.ts';
import { logged } from './jobs.ts';

async function initProbeCase(ctx: CaseContext): Promise<void> {
  await needsInjector(ctx, 'to give the filesystem\'s answers');
  const root = path.join(await ctx.subdir('probe'), 'q');
  const result = await ctx.roleFaulted('init', { queue: root }, { op: 'rename', errno: 'EPERM' }, { root: path.dirname(root) });
  const created = existsSync(path.join(root, 'fsjob.json'));
  ctx.check(
    result.exitCode !== 0 && result.exitCode !== null && !created,
    ['FS-2', 'FS-1'],
    `init on a filesystem whose rename() over an existing file fails with EPERM must try FS-1's operations in tmp/ and refuse the queue (exit non-zero, no fsjob.json); ${created ? 'fsjob.json was written' : 'no fsjob.json'}, ${describeInjectedRun(result)}`,
  );
}

async function linkRefusedCase(ctx: CaseContext): Promise<void> {
  await needsInjector(ctx, 'to give the filesystem\'s answers');
  const root = await ctx.newQueue('refused');
  const work = await ctx.subdir('refused/work');
  const log = path.join(work, 'starts.log');
  const job = await stageJob(await reopen(root), { argv: logged(log, 'victim'), cwd: work });
  const result = await ctx.roleFaulted('consume', { queue: root }, { op: 'link', path: 'jobs/*/claim.*.json', errno: 'EPERM' });
  const snapshot = await ctx.snapshot(root);
  const starts = countBy(await readStarts(log)).get('victim') ?? 0;
  const seen = snapshot.jobs.get(job.id);
  const evidence = [describeInjectedRun(result), ...listing(snapshot, new Set([job.id]))];
  if (!ctx.check(starts === 0 && (seen?.claims.length ?? 0) === 0, ['FS-2', 'CLAIM-5'], `no claim can be linked, so nothing may run: ${starts} starts, claims ${seen?.claims.join(',') || 'none'}`, evidence)) return;
  ctx.check(
    result.exitCode !== 0 && result.exitCode !== null,
    ['FS-2'],
    `a claim link refused with EPERM is the filesystem's lack, not a claim lost to another consumer: the consumer must report it and exit non-zero; ${describeInjectedRun(result)}`,
    evidence,
  );
}

async function retransmittedClaimCase(ctx: CaseContext): Promise<void> {
  await needsInjector(ctx, 'to give the filesystem\'s answers');
  const root = await ctx.newQueue('claim');
  const work = await ctx.subdir('claim/work');
  const log = path.join(work, 'starts.log');
  const job = await stageJob(await reopen(root), { argv: logged(log, 'victim'), cwd: work });
  const result = await ctx.roleFaulted('consume', { queue: root }, { op: 'link', path: 'jobs/*/claim.1.json', errno: 'EEXIST', after: true, nth: 1 });
  const snapshot = await ctx.snapshot(root);
  const seen = snapshot.jobs.get(job.id);
  const starts = countBy(await readStarts(log)).get('victim') ?? 0;
  const receipt = seen?.receipt;
  ctx.check(
    starts === 1 && (seen?.execs.includes(1) ?? false) && receipt?.gen === 1 && receipt.outcome === 'succeeded',
    ['FS-3', 'CLAIM-5'],
    `the consumer's link of claim.1.json happened but answered EEXIST (a retransmission): claim.1.json is its own record, so it must run the job as generation 1 (exec.1.json, a succeeded receipt of generation 1, one start); ${starts} starts, executions ${seen?.execs.join(',') || 'none'}, receipt ${JSON.stringify(receipt && { gen: receipt.gen, outcome: receipt.outcome })}`,
    [describeInjectedRun(result), ...listing(snapshot, new Set([job.id]))],
  );
}

async function retransmittedHoldCase(ctx: CaseContext): Promise<void> {
  await needsInjector(ctx, 'to give the filesystem\'s answers');
  const root = await ctx.newQueue('hold');
  const work = await ctx.subdir('hold/work');
  const request = await writeRequest(path.join(ctx.dir, 'requests'), 'held', { argv: logged(path.join(work, 'starts.log'), 'held'), cwd: work, dedupe: 'retransmitted' });
  const result = await ctx.roleFaulted('produce', { queue: root, request }, { op: 'link', path: 'dedupe/*/1.json', errno: 'EEXIST', after: true, nth: 1 });
  const snapshot = await ctx.snapshot(root);
  const published = [...snapshot.jobs.keys()];
  ctx.check(
    result.exitCode === 0 && published.length === 1,
    ['FS-3', 'DEDUPE-2'],
    `the producer's link of hold 1 happened but answered EEXIST (a retransmission): the hold is its own, so the key is its job's and the job is published (exit 0, one job); published ${published.length}, ${describeInjectedRun(result)}`,
    listing(snapshot),
  );
}

async function receiptRefusedCase(ctx: CaseContext): Promise<void> {
  await needsInjector(ctx, 'to give the filesystem\'s answers');
  const root = await ctx.newQueue('receipt');
  const work = await ctx.subdir('receipt/work');
  const log = path.join(work, 'starts.log');
  const job = await stageJob(await reopen(root), { argv: logged(log, 'victim'), cwd: work, max_attempts: 3 });
  // lease_ms (30 s) of tries and a margin: an owner may keep trying as long as
  // its lease holds (the reference does, renewing it); it is stopped there.
  const result = await ctx.roleFaulted('consume', { queue: root }, { op: 'link', path: 'jobs/*/receipt.json', errno: 'EIO' }, { timeoutMs: 60_000 });
  const snapshot = await ctx.snapshot(root);
  const seen = snapshot.jobs.get(job.id);
  const starts = countBy(await readStarts(log)).get('victim') ?? 0;
  const evidence = [describeInjectedRun(result), ...listing(snapshot, new Set([job.id]))];
  if (!ctx.check(starts === 1, ['RCPT-7', 'RETRY-2'], `the receipt of a succeeded attempt could not be linked (EIO): the owner must never run the command again while its outcome exists only in the owner, although attempts remain; it started ${starts} times`, evidence)) return;
  ctx.check(
    seen?.receipt === undefined && (seen?.claims.length ?? 0) === 1 && !(seen?.ends.includes(1) ?? false),
    ['RCPT-7', 'RECOV-1'],
    `with its receipt refused, generation 1 stays open for RECOV-1 (no end record, no other generation): claims ${seen?.claims.join(',') || 'none'}, ends ${seen?.ends.join(',') || 'none'}`,
    evidence,
  );
}

export const writingCases: ConformanceCase[] = [
  { name: 'consumer/receipt-refused', clauses: ['RCPT-7', 'RETRY-2', 'RECOV-1'], level: 'consumer', strength: 'MUST', heavy: true, run: receiptRefusedCase },
  { name: 'producer/init-probe', clauses: ['FS-2', 'FS-1'], level: 'producer', strength: 'MUST', run: initProbeCase },
  { name: 'producer/retransmitted-link', clauses: ['FS-3', 'DEDUPE-2'], level: 'producer', strength: 'MUST', features: ['dedupe'], run: retransmittedHoldCase },
  { name: 'consumer/link-refused', clauses: ['FS-2', 'CLAIM-5'], level: 'consumer', strength: 'MUST', run: linkRefusedCase },
  { name: 'consumer/retransmitted-link', clauses: ['FS-3', 'CLAIM-5'], level: 'consumer', strength: 'MUST', run: retransmittedClaimCase },
];
