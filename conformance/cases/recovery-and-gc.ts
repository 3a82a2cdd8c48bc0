/**
 * The cases of spec/recovery-and-gc.md (temporary files and ready entries:
 * recovery-and-gc-housekeeping.ts).
 *
 * - recovery/same-decision (CLAIM-10): recover publishes what a consumer would;
 * - recovery/ready-rebuild-invalid (READY-5): priority 0 for an invalid spec;
 * - recovery/staging-of-published (TEMP-2): tmp/<id>/ of a published job is
 *   left alone.
 *
 * Recovery of orphans whose execution still runs (RECOV-1 step 1, RECOV-2,
 * ID-8, ID-9). Each job holds a claim of a dead owner and an exec record
 * naming a real process group the runner started outside any consumer:
 *
 * - `leader`: the group's leader lives and ignores SIGTERM. The recoverer
 *   must send SIGTERM, wait RECOVER_GRACE, send SIGKILL, and break the claim
 *   only once the group is gone;
 * - `leaderless`: the leader has exited, a member lives. The group is still
 *   the recorded execution (ID-8) and may be signalled (ID-9): it must be
 *   stopped before the claim is broken;
 * - `reused` (root): the recorded pgid now belongs to a new process leading
 *   its own group, with another start. The recorded group is proven stopped
 *   (ID-8), the newcomer must never be signalled (ID-9), and the job runs.
 *
 * The runner watches each claim.2.json appear and looks at the planted group
 * at that moment; a claim broken while the group runs is RECOV-1's violation.
 */
import { spawn } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { readFile, utimes, writeFile } from 'node:fs/promises';
import { LEASE_MAX, PROTOCOL_VERSION, RECOVER_GRACE } from '../../src/base/constants.ts';
import { selfIdentity, type Identity } from '../../src/model/identity.ts';
import type { ExecRecord } from '../../src/records/codec.ts';
import { ensurePrivateDir } from '../../src/fs/safefs.ts';
import { type CaseContext, type ConformanceCase, countBy, readStarts } from '../runner/case.ts';
import { cancelRecord, claimRecord, deadOwner, execRecord, FOREIGN_BOOT_ID } from '../runner/fixtures.ts';
import { checkInvariants, listing } from '../runner/inspect.ts';
import type { Failure } from '../runner/report.ts';
import { describeExit, type ProcessResult } from '../runner/process.ts';
import { freshQueue, plantRecord, reopen, spoilSpec, type Staged, stageJob } from '../runner/stage.ts';
import { reusePid } from './identity.ts';
import { logged } from './jobs.ts';
import { processLives, procStat, readProbeLog, SCHEDULING_TOLERANCE_MS, spawnGroup, waitFor, type PlantedGroup } from './probes.ts';

export async function execWithGroup(jobId: string, gen: number, pgid: number, start: string): Promise<ExecRecord> {
  const self = await selfIdentity();
  return { fsjob: PROTOCOL_VERSION, type: 'exec', job_id: jobId, gen, attempt: 1, group: { pgid, start, boot_id: self.boot_id, pid_ns: self.pid_ns }, recorded_ms: Date.now() };
}

/** Plants claim.1 (a dead owner) and exec.1 naming the group. */
async function orphanOf(root: string, job: Staged, pgid: number, start: string): Promise<void> {
  const queue = await reopen(root);
  await plantRecord(queue, job.dir, 'claim.1.json', 'claim', claimRecord(job.id, 1, await deadOwner(), Date.now()));
  await plantRecord(queue, job.dir, 'exec.1.json', 'exec', await execWithGroup(job.id, 1, pgid, start));
}

interface Watched {
  tag: string;
  job: Staged;
  group: PlantedGroup;
  /** Whether the planted probe was alive when claim.2.json first appeared; undefined: it never appeared. */
  aliveAtBreak?: boolean;
  diedAt?: number;
}

/** Polls every job until `done` settles: when claim.2.json appears, is the probe still alive? */
async function watchBreaks(watched: Watched[], done: Promise<unknown>): Promise<void> {
  let over = false;
  void done.then(() => (over = true));
  await waitFor(() => {
    for (const w of watched) {
      const alive = processLives(w.group.probePid, w.group.probeStart);
      if (!alive && w.diedAt === undefined) w.diedAt = Date.now();
      if (w.aliveAtBreak === undefined && existsSync(path.join(w.job.dir, 'claim.2.json'))) w.aliveAtBreak = alive;
    }
    return over;
  }, 600_000, 20);
}

interface Flow {
  label: string;
  /** recover first (when the implementation has it), or consume alone (RECOV-2). */
  recoverFirst: boolean;
}

async function runningOrphans(ctx: CaseContext, flow: Flow): Promise<Failure[]> {
  const failures: Failure[] = [];
  const fail = (clauses: string[], message: string, evidence: string[]): void => void failures.push({ clauses, message, evidence });
  const check = (ok: boolean, clauses: string[], message: string, evidence: string[]): void => {
    if (!ok) fail(clauses, message, evidence);
  };
  const root = await ctx.newQueue(flow.label);
  const work = await ctx.subdir(`${flow.label}/work`);
  const log = path.join(work, 'starts.log');
  const probes = path.join(work, 'probes.log');
  const queue = await reopen(root);
  // max_attempts 2: once the dead attempt is stopped, the job runs again.
  const leaderJob = await stageJob(queue, { argv: logged(log, 'leader'), cwd: work, max_attempts: 2 });
  const leaderlessJob = await stageJob(queue, { argv: logged(log, 'leaderless'), cwd: work, max_attempts: 2 });
  const watched: Watched[] = [];
  try {
    watched.push({ tag: 'leader', job: leaderJob, group: await spawnGroup(probes, 'leader', { onTerm: 'ignore', scratch: work }) });
    watched.push({ tag: 'leaderless', job: leaderlessJob, group: await spawnGroup(probes, 'leaderless', { onTerm: 'exit', leaderExits: true, scratch: work }) });
    for (const w of watched) await orphanOf(root, w.job, w.group.pgid, w.group.start);
    const runs: ProcessResult[] = [];
    const roles = (async (): Promise<void> => {
      if (flow.recoverFirst) runs.push(await ctx.role('recover', { queue: root }));
      runs.push(await ctx.role('consume', { queue: root }));
    })();
    await watchBreaks(watched, roles);
    await roles;
    const log2 = await readProbeLog(probes);
    const snapshot = await ctx.snapshot(root);
    const starts = countBy(await readStarts(log));
    const who = flow.recoverFirst ? 'recover' : 'consume (alone: RECOV-2)';
    for (const w of watched) {
      const evidence = [...runs.map(describeExit), ...log2.lines.filter((l) => l.includes(` ${w.tag}`)).slice(0, 6).map((l) => `probe: ${l}`), ...listing(snapshot, new Set([w.job.id]))];
      const alive = processLives(w.group.probePid, w.group.probeStart);
      const what = w.tag === 'leader' ? `the recorded group ${w.group.pgid} (its leader alive, ignoring SIGTERM)` : `the recorded group ${w.group.pgid} (its leader exited; member ${w.group.probePid} alive)`;
      const first = w.tag === 'leader' ? ['RECOV-1'] : ['ID-8', 'RECOV-1'];
      if (w.aliveAtBreak === true) {
        fail([...first, 'CLAIM-3', 'I2'], `${who} broke the dead owner's claim (claim.2.json appeared) while ${what} still ran: a claim is broken only after its execution is proven stopped`, evidence);
        continue;
      }
      if (w.aliveAtBreak === undefined) {
        fail(flow.recoverFirst ? [...first, 'CLAIM-3'] : ['RECOV-2', ...first], `${who} never recovered the orphan: its owner is dead and ${what} can be stopped (same host, identity matches), so it must be stopped and the claim broken${alive ? '; the group still runs' : ''}`, evidence);
        continue;
      }
      const term = log2.terms(w.tag)[0];
      check(term !== undefined, [...first], `${what} was stopped without a SIGTERM first: RECOV-1 sends SIGTERM, waits up to RECOVER_GRACE (${RECOVER_GRACE} ms), then SIGKILL`, evidence);
      if (w.tag === 'leader' && term !== undefined && w.diedAt !== undefined) {
        const lived = w.diedAt - term;
        check(lived >= RECOVER_GRACE - SCHEDULING_TOLERANCE_MS, ['RECOV-1'], `${what} was killed ${lived} ms after its SIGTERM: SIGKILL comes only after RECOVER_GRACE (${RECOVER_GRACE} ms, less ${SCHEDULING_TOLERANCE_MS} ms tolerance)`, evidence);
      }
      const job = snapshot.jobs.get(w.job.id);
      const ran = starts.get(w.tag) ?? 0;
      check(job?.receipt?.outcome === 'succeeded' && ran === 1, ['RECOV-1', 'RETRY-1'], `once the dead attempt is stopped, the job (max_attempts 2) runs once more: receipt ${job?.receipt?.outcome ?? 'none'}, ${ran} starts`, evidence);
    }
    failures.push(...(await checkInvariants(snapshot, { accepted: watched.map((w) => w.job.id) })));
    return failures;
  } finally {
    for (const w of watched) w.group.kill();
  }
}

async function runningOrphansCase(ctx: CaseContext): Promise<void> {
  const flows: Flow[] = [{ label: 'consume-alone', recoverFirst: false }];
  if (ctx.impl.roles.recover !== undefined) flows.push({ label: 'recover', recoverFirst: true });
  else ctx.note(`${ctx.impl.name} has no recover role: only consume's own recovery was checked`);
  // Failures of consume alone come first: it is the flow every consumer has.
  const results = await Promise.allSettled(flows.map((flow) => runningOrphans(ctx, flow)));
  for (const result of results) {
    if (result.status === 'rejected') throw result.reason;
    ctx.failures.push(...result.value);
  }
}

async function reusedGroupCase(ctx: CaseContext): Promise<void> {
  const root = await ctx.newQueue('reused');
  const work = await ctx.subdir('reused/work');
  const log = path.join(work, 'starts.log');
  const job = await stageJob(await reopen(root), { argv: logged(log, 'victim'), cwd: work, max_attempts: 2 });
  // reusePid's newcomer is started detached: it leads a new group under the recycled number.
  const reused = await reusePid();
  if (reused === undefined) ctx.skip('could not get a pid back through /proc/sys/kernel/ns_last_pid in 20 tries');
  try {
    await orphanOf(root, job, reused.dead.pid, reused.dead.start);
    const runs: ProcessResult[] = [];
    if (ctx.impl.roles.recover !== undefined) runs.push(await ctx.role('recover', { queue: root }));
    runs.push(await ctx.role('consume', { queue: root }));
    const snapshot = await ctx.snapshot(root);
    const evidence = [...runs.map(describeExit), ...listing(snapshot, new Set([job.id]))];
    const newcomer = procStat(reused.newcomer.pid);
    const untouched = newcomer !== undefined && newcomer.start === reused.newcomer.start && newcomer.state !== 'Z';
    ctx.check(untouched, ['ID-9', 'I5'], `pid ${reused.newcomer.pid} now leads another process group (start ${reused.newcomer.start}, the exec record says ${reused.dead.start}); it must never be signalled, and it was killed`, evidence);
    const ran = countBy(await readStarts(log)).get('victim') ?? 0;
    const receipt = snapshot.jobs.get(job.id)?.receipt;
    ctx.check(receipt?.outcome === 'succeeded' && ran === 1, ['ID-8', 'RECOV-1'], `the recorded group is proven stopped (its pgid ${reused.dead.pid} now has a leader with another start), so the orphan is recovered and runs once more; got receipt ${receipt?.outcome ?? 'none'}, ${ran} starts`, evidence);
    for (const failure of await checkInvariants(snapshot, { accepted: [job.id] })) ctx.failures.push(failure);
  } finally {
    reused.newcomer.stop();
  }
}

/**
 * Owners a judge must leave alone, each tempting a different shortcut: a
 * foreign owner (another boot id) whose pid is dead here (judging it by the
 * local process table breaks it: ID-7); one that also carries this host's
 * name (judging "same host" by the name breaks it: ID-1); and a live owner
 * on this host whose command name holds ") (" (parsing /proc/<pid>/stat
 * after the first ")" reads the wrong start and breaks it: ID-2). Each has
 * a fresh lease; recover and consume must break none of them.
 */
async function ownerIdentitiesCase(ctx: CaseContext): Promise<void> {
  const root = await ctx.newQueue('identities');
  const work = await ctx.subdir('identities/work');
  const log = path.join(work, 'starts.log');
  const queue = await reopen(root);
  const self = await selfIdentity();
  const dead = await deadOwner();
  const oddName = path.join(work, 'odd) (name');
  copyFileSync('/bin/sleep', oddName);
  chmodSync(oddName, 0o700);
  const odd = spawn(oddName, ['600'], { stdio: 'ignore', detached: true });
  try {
    let oddStart: string | undefined;
    await waitFor(() => (oddStart = odd.pid === undefined ? undefined : procStat(odd.pid)?.start) !== undefined, 10_000, 10);
    if (odd.pid === undefined || oddStart === undefined) ctx.skip(`could not start ${oddName}`);
    const owners: { tag: string; clauses: string[]; why: string; owner: Identity }[] = [
      { tag: 'foreign', clauses: ['ID-7', 'CLAIM-3'], why: `a foreign owner (boot id ${FOREIGN_BOOT_ID}) whose pid ${dead.pid} is dead on this host: a foreign owner is judged by its lease only, never by this host's process table`, owner: { ...self, host: 'elsewhere.example', boot_id: FOREIGN_BOOT_ID, pid: dead.pid, start: dead.start } },
      { tag: 'namesake', clauses: ['ID-1', 'ID-7', 'CLAIM-3'], why: `an owner with this host's name but another boot id, whose pid ${dead.pid} is dead here: same host means equal boot_id and pid_ns, never the host name`, owner: { ...self, boot_id: FOREIGN_BOOT_ID, pid: dead.pid, start: dead.start } },
      { tag: 'odd-name', clauses: ['ID-2', 'ID-6', 'CLAIM-3'], why: `a live owner on this host (pid ${odd.pid}, start ${oddStart}) whose command name is "odd) (name": its start is field 22 counted after the LAST ")" of /proc/<pid>/stat`, owner: { ...self, pid: odd.pid, start: oddStart } },
    ];
    const jobs = [];
    for (const o of owners) {
      const job = await stageJob(queue, { argv: logged(log, o.tag), cwd: work });
      await plantRecord(queue, job.dir, 'claim.1.json', 'claim', claimRecord(job.id, 1, o.owner, Date.now(), LEASE_MAX));
      jobs.push({ ...o, job });
    }
    const runs: ProcessResult[] = [];
    if (ctx.impl.roles.recover !== undefined) runs.push(await ctx.role('recover', { queue: root }));
    runs.push(await ctx.role('consume', { queue: root }));
    const snapshot = await ctx.snapshot(root);
    const starts = countBy(await readStarts(log));
    for (const o of jobs) {
      const sj = snapshot.jobs.get(o.job.id);
      ctx.check(JSON.stringify(sj?.claims) === '[1]' && (starts.get(o.tag) ?? 0) === 0 && sj?.receipt === undefined, o.clauses, `${o.why}; the claim was broken (claims ${sj?.claims.join(',')}, ${starts.get(o.tag) ?? 0} starts, receipt ${sj?.receipt?.outcome ?? 'none'})`, [...runs.map(describeExit), ...listing(snapshot, new Set([o.job.id]))]);
    }
    ctx.check(processLives(odd.pid, oddStart), ['ID-9', 'I5'], `the live owner "odd) (name" (pid ${odd.pid}) must never be signalled`);
  } finally {
    if (odd.pid !== undefined) odd.kill('SIGKILL');
  }
}

async function sameDecisionCase(ctx: CaseContext): Promise<void> {
  const f = await freshQueue(ctx, 'same');
  const plantDead = async (job: Staged): Promise<void> => {
    const dead = await deadOwner();
    await plantRecord(f.queue, job.dir, 'claim.1.json', 'claim', claimRecord(job.id, 1, dead, Date.now() - 5000));
    await plantRecord(f.queue, job.dir, 'exec.1.json', 'exec', execRecord(job.id, 1, dead));
  };
  // Both jobs' only attempt died with its owner: without CLAIM-10's order, a recoverer says lost.
  const cancelled = await stageJob(f.queue, { argv: logged(f.log, 'cancelled'), cwd: f.work, max_attempts: 1 });
  await plantDead(cancelled);
  await plantRecord(f.queue, cancelled.dir, 'cancel.json', 'cancel', cancelRecord(cancelled.id, false, await selfIdentity()));
  const invalid = await stageJob(f.queue, { argv: logged(f.log, 'invalid'), cwd: f.work, max_attempts: 1 });
  await plantDead(invalid);
  await spoilSpec(invalid);
  const role = ctx.impl.roles.recover !== undefined ? 'recover' : 'consume';
  const run = await ctx.role(role, { queue: f.root });
  const snapshot = await ctx.snapshot(f.root);
  const evidence = [describeExit(run), ...listing(snapshot, new Set([cancelled.id, invalid.id]))];
  const a = snapshot.jobs.get(cancelled.id)?.receipt;
  const b = snapshot.jobs.get(invalid.id)?.receipt;
  ctx.check(a?.outcome === 'cancelled', ['CLAIM-10', 'RECOV-1', 'CLAIM-6'], `${role} over a dead owner's claim of a job with cancel.json must publish what a consumer would: cancelled (CLAIM-6 step 2 before step 4); got ${a?.outcome ?? 'no receipt'}`, evidence);
  ctx.check(b?.outcome === 'rejected' && b.reason === 'invalid_spec', ['CLAIM-10', 'RECOV-1', 'CLAIM-6'], `${role} over a dead owner's claim of a job with an invalid spec must publish rejected invalid_spec (CLAIM-6 step 1); got ${b?.outcome ?? 'no receipt'} ${b?.reason ?? ''}`, evidence);
}

async function stagingOfPublishedCase(ctx: CaseContext): Promise<void> {
  const f = await freshQueue(ctx, 'temp2');
  const job = await stageJob(f.queue, { argv: logged(f.log, 'published'), cwd: f.work });
  // A power loss may leave the published job's old name in tmp/ (DUR-3), here a copy, two hours old.
  const staging = f.queue.paths.staging(job.id);
  await ensurePrivateDir(staging, f.queue.fsOptions);
  await writeFile(path.join(staging, 'spec.json'), await readFile(path.join(job.dir, 'spec.json')), { mode: 0o600 });
  const old = new Date(Date.now() - 2 * 3_600_000);
  await utimes(path.join(staging, 'spec.json'), old, old);
  await utimes(staging, old, old);
  const run = await ctx.role('recover', { queue: f.root });
  const kept = await readFile(path.join(staging, 'spec.json')).then(() => true, () => false);
  ctx.check(kept, ['TEMP-2', 'TEMP-1'], `an entry of tmp/ named after a job that jobs/ holds (tmp/${job.id}/, older than TEMP_MAX_AGE) must not be removed: after a power loss it may be that job's own directory; recover removed it`, [describeExit(run)]);
}

async function readyRebuildCase(ctx: CaseContext): Promise<void> {
  const f = await freshQueue(ctx, 'rebuild');
  const job = await stageJob(f.queue, { argv: logged(f.log, 'invalid'), cwd: f.work, priority: 7 }, { ready: false });
  await spoilSpec(job);
  const run = await ctx.role('recover', { queue: f.root });
  const snapshot = await ctx.snapshot(f.root);
  const names = snapshot.ready.map((e) => e.name);
  ctx.check(names.includes(`1000-${job.id}`), ['READY-5', 'READY-4'], `recover must rebuild the missing ready entry of a job whose spec is invalid with priority 0: ready/1000-${job.id}; ready/ holds ${names.join(' ') || 'nothing'}`, [describeExit(run)]);
}

export const recoveryCases: ConformanceCase[] = [
  { name: 'recovery/running-orphans', clauses: ['RECOV-1', 'RECOV-2', 'ID-8', 'ID-9', 'CLAIM-3', 'I2'], level: 'consumer', strength: 'MUST', heavy: true, run: runningOrphansCase },
  { name: 'recovery/owner-identities', clauses: ['ID-1', 'ID-2', 'ID-7', 'ID-6', 'CLAIM-3', 'ID-9', 'I5'], level: 'consumer', strength: 'MUST', run: ownerIdentitiesCase },
  { name: 'recovery/reused-group', clauses: ['ID-8', 'ID-9', 'RECOV-1', 'I5'], level: 'consumer', strength: 'MUST', root: true, exclusive: true, run: reusedGroupCase },
  { name: 'recovery/same-decision', clauses: ['CLAIM-10', 'RECOV-1', 'CLAIM-6'], level: 'consumer', strength: 'MUST', run: sameDecisionCase },
  { name: 'recovery/ready-rebuild-invalid', clauses: ['READY-5', 'READY-4'], level: 'consumer', strength: 'MUST', roles: ['recover'], run: readyRebuildCase },
  { name: 'recovery/staging-of-published', clauses: ['TEMP-2', 'TEMP-1'], level: 'consumer', strength: 'MUST', roles: ['recover'], run: stagingOfPublishedCase },
];

