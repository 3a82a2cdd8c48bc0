/**
 * Owner identity and liveness (ID-6, ID-7, LEASE-3, I5): claims planted with
 * owners the consumer must judge dead (a pid reused by a live process, a
 * foreign owner whose lease + GUARDIAN_LIMIT + LEASE_SKEW ran out) or alive (a
 * live process with the recorded start, a foreign owner whose lease runs or
 * whose guardian may still be stopping its commands), then recover and
 * consume.
 */
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { GUARDIAN_LIMIT, LEASE_MAX, LEASE_MIN, LEASE_SKEW } from '../../src/base/constants.ts';
import { processStart, selfIdentity, type Identity } from '../../src/model/identity.ts';
import { type CaseContext, type ConformanceCase, countBy, readStarts } from '../runner/case.ts';
import { claimRecord, foreignOwner, ownerOf, sleeper } from '../runner/fixtures.ts';
import { listing } from '../runner/inspect.ts';
import { describeExit, sleep, type ProcessResult } from '../runner/process.ts';
import { plantRecord, reopen, stageJob, type Staged } from '../runner/stage.ts';
import { logged } from './jobs.ts';

interface Setup {
  root: string;
  log: string;
  victim: Staged;
}

async function setup(ctx: CaseContext): Promise<Setup> {
  const root = await ctx.newQueue('identity');
  const work = await ctx.subdir('identity/work');
  const queue = await reopen(root);
  const log = path.join(work, 'starts.log');
  const victim = await stageJob(queue, { argv: logged(log, 'victim'), cwd: work });
  return { root, log, victim };
}

async function plantClaim(root: string, victim: Staged, owner: Identity, claimedMs: number, leaseMs: number): Promise<void> {
  await plantRecord(await reopen(root), victim.dir, 'claim.1.json', 'claim', claimRecord(victim.id, 1, owner, claimedMs, leaseMs));
}

/** recover (when the implementation has it), then consume. */
async function recoverAndConsume(ctx: CaseContext, root: string): Promise<ProcessResult[]> {
  const runs: ProcessResult[] = [];
  if (ctx.impl.roles.recover !== undefined) runs.push(await ctx.role('recover', { queue: root }));
  runs.push(await ctx.role('consume', { queue: root }));
  return runs;
}

async function expectRecovered(ctx: CaseContext, s: Setup, runs: ProcessResult[], clauses: string[], why: string): Promise<void> {
  const snapshot = await ctx.snapshot(s.root);
  const job = snapshot.jobs.get(s.victim.id);
  const starts = countBy(await readStarts(s.log)).get('victim') ?? 0;
  const evidence = [...runs.map(describeExit), ...listing(snapshot, new Set([s.victim.id]))];
  ctx.check(job?.receipt?.outcome === 'succeeded' && starts === 1, clauses, `${why}: the claim must be broken and the job run exactly once; got receipt ${job?.receipt?.outcome ?? 'none'}, ${starts} starts`, evidence);
  // recover may break the claim and release the job (an end record) before consume claims it again:
  // the dead claim is broken once, and every later generation but the last ended properly.
  const claims = job?.claims ?? [];
  const top = claims.at(-1) ?? 0;
  const unended = claims.filter((g) => g > 1 && g < top && !job?.ends.includes(g));
  ctx.check(top >= 2 && unended.length === 0 && (job?.execs.length ?? 0) === 1, [...clauses, 'RECOV-1', 'CLAIM-5'], `the orphan is recovered once: claims ${claims.join(',')}, executions ${job?.execs.join(',') || 'none'}${unended.length > 0 ? `, generations ${unended.join(',')} were broken without ending` : ''}`, evidence);
}

async function expectLeftAlone(ctx: CaseContext, s: Setup, runs: ProcessResult[], clauses: string[], why: string): Promise<void> {
  const snapshot = await ctx.snapshot(s.root);
  const job = snapshot.jobs.get(s.victim.id);
  const starts = countBy(await readStarts(s.log)).get('victim') ?? 0;
  const evidence = [...runs.map(describeExit), ...listing(snapshot, new Set([s.victim.id]))];
  ctx.check(JSON.stringify(job?.claims) === '[1]' && starts === 0 && job?.receipt === undefined, clauses, `${why}: the claim must never be broken; claims ${job?.claims.join(',')}, ${starts} starts, receipt ${job?.receipt?.outcome ?? 'none'}`, evidence);
  for (const run of runs) ctx.check(!run.timedOut && run.signal === null, ['MANIFEST-2'], 'recover and consume must finish when the only job is held by a live owner', [describeExit(run)]);
}

/** A live process now holding `pid`, recycled through /proc/sys/kernel/ns_last_pid; undefined if the pid could not be had back. */
export async function reusePid(): Promise<{ dead: Identity; newcomer: { pid: number; start: string; stop: () => void } } | undefined> {
  for (let attempt = 1; attempt <= 20; attempt++) {
    const victim = await sleeper();
    const dead = await ownerOf(victim.pid, victim.start);
    await sleep(30); // the newcomer must start on a later clock tick
    await victim.stop();
    await writeFile('/proc/sys/kernel/ns_last_pid', String(victim.pid - 1));
    const child = spawn('sleep', ['600'], { stdio: 'ignore', detached: true });
    const pid = child.pid;
    if (pid === undefined) continue;
    const stop = (): void => {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    };
    if (pid === victim.pid) {
      let info = await processStart(pid);
      for (let i = 0; i < 50 && info === null; i++) {
        await sleep(10);
        info = await processStart(pid);
      }
      if (info !== null && info.start !== victim.start) return { dead, newcomer: { pid, start: info.start, stop } };
    }
    stop();
  }
  return undefined;
}

async function reusedPidCase(ctx: CaseContext): Promise<void> {
  const s = await setup(ctx);
  const reused = await reusePid();
  if (reused === undefined) ctx.skip('could not get a pid back through /proc/sys/kernel/ns_last_pid in 20 tries');
  try {
    await plantClaim(s.root, s.victim, reused.dead, Date.now(), 30_000);
    const runs = await recoverAndConsume(ctx, s.root);
    await expectRecovered(ctx, s, runs, ['ID-6', 'I5'], `the owner's pid ${reused.dead.pid} now belongs to another process (start ${reused.newcomer.start}, recorded ${reused.dead.start})`);
    const still = await processStart(reused.newcomer.pid);
    ctx.check(still !== null && still.start === reused.newcomer.start && still.state !== 'Z', ['ID-9', 'I5'], `the process that reused pid ${reused.newcomer.pid} must never be signalled`);
  } finally {
    reused.newcomer.stop();
  }
}

async function liveOwnerCase(ctx: CaseContext): Promise<void> {
  const s = await setup(ctx);
  const owner = await sleeper();
  try {
    await plantClaim(s.root, s.victim, await ownerOf(owner.pid, owner.start), Date.now() - 3_600_000, LEASE_MIN);
    const runs = await recoverAndConsume(ctx, s.root);
    // An old claimed_ms and the shortest lease: a same-host owner is judged by its process, never by its lease.
    await expectLeftAlone(ctx, s, runs, ['CLAIM-3', 'ID-6', 'I5'], `the owner (pid ${owner.pid}, start ${owner.start}) is alive`);
    const info = await processStart(owner.pid);
    ctx.check(info !== null && info.start === owner.start && info.state !== 'Z', ['ID-9', 'I5'], 'the live owner must not be signalled');
  } finally {
    await owner.stop();
  }
}

async function foreignExpiredCase(ctx: CaseContext): Promise<void> {
  const s = await setup(ctx);
  await plantClaim(s.root, s.victim, foreignOwner(await selfIdentity()), Date.now() - LEASE_MIN - GUARDIAN_LIMIT - LEASE_SKEW - 1_000, LEASE_MIN);
  const runs = await recoverAndConsume(ctx, s.root);
  await expectRecovered(ctx, s, runs, ['ID-7', 'LEASE-3'], 'a foreign owner whose last renewal is more than lease + GUARDIAN_LIMIT + LEASE_SKEW old is dead');
}

/** claimed_ms of a claim record, or undefined when it cannot be read. */
async function claimedMsOf(file: string): Promise<number | undefined> {
  try {
    const value = (JSON.parse(await readFile(file, 'utf8')) as { claimed_ms?: unknown }).claimed_ms;
    return typeof value === 'number' ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The guardian's window: a foreign claim past lease + LEASE_SKEW but not past
 * lease + GUARDIAN_LIMIT + LEASE_SKEW. Its owner may have died just before
 * its lease ran out, and its guardian may still be stopping its commands
 * (WORKER-2), so breaking it now could run the job twice at once. The check
 * reads the breaking claim's own claimed_ms, so a machine slow enough for
 * recover and consume to run past the bound cannot make it fail.
 */
async function foreignGuardianWindowCase(ctx: CaseContext): Promise<void> {
  const s = await setup(ctx);
  const claimedMs = Date.now() - LEASE_MIN - LEASE_SKEW - 1_000;
  const bound = claimedMs + LEASE_MIN + GUARDIAN_LIMIT + LEASE_SKEW;
  await plantClaim(s.root, s.victim, foreignOwner(await selfIdentity()), claimedMs, LEASE_MIN);
  const runs = await recoverAndConsume(ctx, s.root);
  const snapshot = await ctx.snapshot(s.root);
  const job = snapshot.jobs.get(s.victim.id);
  const evidence = [...runs.map(describeExit), ...listing(snapshot, new Set([s.victim.id]))];
  // Unbroken, or broken after the bound; an unreadable claim.2.json counts as early.
  const next = job?.claims.includes(2) === true ? ((await claimedMsOf(path.join(s.victim.dir, 'claim.2.json'))) ?? -1) : undefined;
  const seen = next === undefined ? 'it was left alone' : next < 0 ? 'claim.2.json has no readable claimed_ms' : `claim 2 was taken at ${next}`;
  ctx.check(next === undefined || next > bound, ['LEASE-3', 'ID-7', 'WORKER-2'], `a foreign claim renewed at ${claimedMs} with lease ${LEASE_MIN} ms may be broken only after last renewal + lease + GUARDIAN_LIMIT + LEASE_SKEW (${bound}); ${seen}`, evidence);
  for (const run of runs) ctx.check(!run.timedOut && run.signal === null, ['MANIFEST-2'], 'recover and consume must finish when the only job is held by a live owner', [describeExit(run)]);
}

async function foreignLiveCase(ctx: CaseContext): Promise<void> {
  const s = await setup(ctx);
  await plantClaim(s.root, s.victim, foreignOwner(await selfIdentity()), Date.now(), LEASE_MAX);
  const runs = await recoverAndConsume(ctx, s.root);
  await expectLeftAlone(ctx, s, runs, ['ID-7', 'LEASE-3', 'CLAIM-3'], 'a foreign owner with an unexpired lease is alive (never judged by its pid)');
}

export const identityCases: ConformanceCase[] = [
  { name: 'identity/reused-pid', clauses: ['ID-6', 'I5', 'RECOV-1'], level: 'consumer', strength: 'MUST', root: true, exclusive: true, run: reusedPidCase },
  { name: 'identity/live-owner', clauses: ['CLAIM-3', 'ID-6', 'I5'], level: 'consumer', strength: 'MUST', run: liveOwnerCase },
  { name: 'identity/foreign-expired', clauses: ['ID-7', 'LEASE-3', 'RECOV-1'], level: 'consumer', strength: 'MUST', run: foreignExpiredCase },
  { name: 'identity/foreign-live', clauses: ['ID-7', 'LEASE-3', 'CLAIM-3'], level: 'consumer', strength: 'MUST', run: foreignLiveCase },
  { name: 'identity/foreign-guardian-window', clauses: ['LEASE-3', 'ID-7', 'WORKER-2'], level: 'consumer', strength: 'MUST', run: foreignGuardianWindowCase },
];
