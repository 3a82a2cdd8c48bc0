/**
 * Interleavings forced with the crash injector's pause point (runner/pause.ts):
 * the consumer stops itself just before one of its links, the case acts, and
 * the consumer goes on. Nothing here depends on which process a loaded
 * machine happens to schedule first.
 *
 * - `execution/armed-handshake` (EXEC-2): paused before the link of
 *   exec.1.json, the command must not have started (its leader waits for a
 *   release that comes after the link); killed there, the leader must exit
 *   without running the command.
 * - `execution/exec-publication-fails` (EXEC-3): while the owner is paused
 *   before the link, the runner publishes exec.1.json itself; the owner's
 *   link fails, so it must kill the group and end the generation `released`
 *   without running the command.
 * - `receipt/already-published` (RCPT-3, RCPT-6): while the owner is paused
 *   before the link of receipt.json, the runner publishes one; the owner's
 *   must fail and the runner's stay.
 * - `claim/receipt-after-listing` (CLAIM-6 step 0): a recoverer paused before
 *   its claim of generation 2; meanwhile the job gets a receipt; once its
 *   claim is published the owner must publish nothing and not run the job.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { PROTOCOL_VERSION } from '../../src/base/constants.ts';
import { selfIdentity } from '../../src/model/identity.ts';
import type { ReceiptRecord } from '../../src/records/codec.ts';
import { type CaseContext, type ConformanceCase, countBy, readStarts } from '../runner/case.ts';
import { claimRecord, deadOwner, receiptRecord } from '../runner/fixtures.ts';
import { checkInvariants, listing } from '../runner/inspect.ts';
import { describeExit, type ProcessResult } from '../runner/process.ts';
import type { Failure } from '../runner/report.ts';
import { plantRecord, reopen, stageJob } from '../runner/stage.ts';
import type { CrashRun, CrashRunResult } from '../crash/run.ts';
import { logged, sh } from './jobs.ts';
import { execWithGroup } from './recovery-and-gc.ts';
import { waitFor } from './probes.ts';
import { describeInjectedRun, needsInjector } from '../runner/pause.ts';

/** How long a released command may take to log its start on a loaded machine: the wait for one that must not start. */
const START_GRACE_MS = 3000;

function describeRun(run: CrashRunResult): string {
  return `consume (paused run): ${describeInjectedRun(run)}`;
}

/** Starts consume paused at `pattern`, or records a failure and returns undefined when it never gets there. */
async function pausedConsume(ctx: CaseContext, queue: string, pattern: string, clauses: string[], failures: Failure[]): Promise<CrashRun | undefined> {
  const run = await ctx.startRolePaused('consume', { queue }, { op: 'link', path: pattern });
  const call = await run.paused;
  if (call === undefined) {
    const result = await run.result;
    failures.push({ clauses, message: `consume ended without ever linking ${pattern}: the case could not pause it there`, evidence: [describeRun(result), ...listing(await ctx.snapshot(queue))] });
    return undefined;
  }
  return run;
}

/**
 * The command records whether its own exec record existed when it started:
 * the runner looks for a link of exec.<g>.json naming its group.
 */
function selfChecking(log: string, tag: string): [string, ...string[]] {
  return sh(`printf 'start %s\\n' "$1" >> "$2"; for f in "$FSJOB_QUEUE/jobs/$FSJOB_JOB_ID"/exec.*.json; do [ -e "$f" ] && printf 'seen %s %s\\n' "$1" "\${f##*/}" >> "$2"; done; :`, tag, log);
}

async function armedFlow(ctx: CaseContext, label: string, killWhilePaused: boolean): Promise<Failure[]> {
  const failures: Failure[] = [];
  const root = await ctx.newQueue(label);
  const work = await ctx.subdir(`${label}/work`);
  const log = path.join(work, 'starts.log');
  const job = await stageJob(await reopen(root), { argv: selfChecking(log, 'job'), cwd: work });
  const run = await pausedConsume(ctx, root, 'jobs/*/exec.1.json', ['EXEC-3', 'EXEC-2'], failures);
  if (run === undefined) return failures;
  try {
    // The leader exists and waits for its release, which comes only after this link.
    const startedEarly = await waitFor(async () => (await readStarts(log)).length > 0, START_GRACE_MS, 50);
    if (startedEarly) failures.push({ clauses: ['EXEC-2'], message: `the command started while its owner was stopped just before linking exec.1.json: the leader must not execute the command until released, and the release comes after the exec record (waited ${START_GRACE_MS} ms)`, evidence: [readFileSync(log, 'utf8').trim(), ...listing(await ctx.snapshot(root), new Set([job.id]))] });
    let result: CrashRunResult;
    if (killWhilePaused) {
      // A guardian (WORKER-2) may stop the leader's group first when the owner dies: whoever stops it, the
      // command must not run. (Which of the two acted cannot be told from outside: freezing the guardian
      // fails, because its group is orphaned by the owner's death and the kernel sends it SIGCONT.)
      run.kill();
      result = await run.result;
      // Its leader reads end of file from the release pipe now: it must exit without running the command.
      const ranLater = await waitFor(async () => (await readStarts(log)).length > 0, START_GRACE_MS, 50);
      if (ranLater && !startedEarly) failures.push({ clauses: ['EXEC-2'], message: `the owner died before releasing its command, yet the command ran: a leader whose owner dies before the release must exit without executing it (observed within ${START_GRACE_MS} ms of the owner's death)`, evidence: [describeRun(result), ...listing(await ctx.snapshot(root), new Set([job.id]))] });
      if (failures.length > 0) return failures;
      // Recovery: the dead generation recorded no execution, so the job runs once.
      const runs: ProcessResult[] = [];
      if (ctx.impl.roles.recover !== undefined) runs.push(await ctx.role('recover', { queue: root }));
      runs.push(await ctx.role('consume', { queue: root }));
      const snapshot = await ctx.snapshot(root);
      const starts = countBy(await readStarts(log)).get('job') ?? 0;
      if (snapshot.jobs.get(job.id)?.receipt?.outcome !== 'succeeded' || starts !== 1) failures.push({ clauses: ['RECOV-1', 'RETRY-1'], message: `the dead owner's generation never released its command (no exec record): recovery must run the job once; got receipt ${snapshot.jobs.get(job.id)?.receipt?.outcome ?? 'none'}, ${starts} starts`, evidence: [...runs.map(describeExit), ...listing(snapshot, new Set([job.id]))] });
      failures.push(...(await checkInvariants(snapshot, { accepted: [job.id] })));
      return failures;
    }
    run.resume();
    result = await run.result;
    const seen = readFileSync(log, 'utf8').includes('seen job exec.1.json');
    const snapshot = await ctx.snapshot(root);
    if (!startedEarly && !seen) failures.push({ clauses: ['EXEC-2', 'EXEC-3'], message: 'the command started before exec.1.json existed: no command runs unrecorded', evidence: [describeRun(result), readFileSync(log, 'utf8').trim(), ...listing(snapshot, new Set([job.id]))] });
    if (snapshot.jobs.get(job.id)?.receipt?.outcome !== 'succeeded') failures.push({ clauses: ['EXEC-2', 'I3'], message: `after the pause the job must finish: receipt ${snapshot.jobs.get(job.id)?.receipt?.outcome ?? 'none'}`, evidence: [describeRun(result), ...listing(snapshot, new Set([job.id]))] });
    failures.push(...(await checkInvariants(snapshot, { accepted: [job.id] })));
    return failures;
  } finally {
    run.kill();
  }
}

async function armedHandshakeCase(ctx: CaseContext): Promise<void> {
  await needsInjector(ctx, 'to pause the consumer before a chosen call');
  const flows = await Promise.all([armedFlow(ctx, 'released-after-link', false), armedFlow(ctx, 'owner-dies-before-release', true)]);
  for (const failures of flows) ctx.failures.push(...failures);
}

async function execPublicationFailsCase(ctx: CaseContext): Promise<void> {
  await needsInjector(ctx, 'to pause the consumer before a chosen call');
  const root = await ctx.newQueue('exec-taken');
  const work = await ctx.subdir('exec-taken/work');
  const log = path.join(work, 'starts.log');
  // max_attempts 2: the record the runner plants counts an attempt until its generation ends uncounted.
  // The command logs its process group, so the runner can tell whether an exec record names it.
  const argv = sh(`t=$1 l=$2; read -r s < /proc/$$/stat; s=\${s##*) }; set -- $s; printf 'start %s\\ngroup %s %s\\n' "$t" "$t" "$3" >> "$l"`, 'job', log);
  const job = await stageJob(await reopen(root), { argv, cwd: work, max_attempts: 2 });
  const failures: Failure[] = [];
  const run = await pausedConsume(ctx, root, 'jobs/*/exec.1.json', ['EXEC-3'], failures);
  if (run === undefined) {
    ctx.failures.push(...failures);
    return;
  }
  try {
    const dead = await deadOwner();
    await plantRecord(await reopen(root), job.dir, 'exec.1.json', 'exec', await execWithGroup(job.id, 1, dead.pid, dead.start));
    run.resume();
    const result = await run.result;
    const snapshot = await ctx.snapshot(root);
    const lines = readFileSync(log, 'utf8').trim().split('\n').filter((l) => l !== '');
    const evidence = [describeRun(result), ...lines.map((l) => `log: ${l}`), ...listing(snapshot, new Set([job.id]))];
    const sj = snapshot.jobs.get(job.id);
    // Every group the command ran in must be named by an exec record the owner published (not the runner's exec.1.json).
    const recorded = new Set<number>();
    for (const g of sj?.execs ?? []) {
      if (g === 1) continue;
      const exec = JSON.parse(readFileSync(path.join(job.dir, `exec.${g}.json`), 'utf8')) as { group?: { pgid?: number } | null };
      if (typeof exec.group?.pgid === 'number') recorded.add(exec.group.pgid);
    }
    const groups = lines.filter((l) => l.startsWith('group job ')).map((l) => Number(l.slice('group job '.length)));
    const unrecorded = groups.filter((g) => !recorded.has(g));
    const starts = countBy(await readStarts(log)).get('job') ?? 0;
    if (unrecorded.length > 0) ctx.fail(['EXEC-3', 'EXEC-2'], `the owner could not publish exec.1.json (the runner had taken the name) and must kill its group without running the command; the command ran in group ${unrecorded.join(', ')}, which no exec record of the owner's names`, evidence);
    else {
      const end = sj?.ends.includes(1) === true ? JSON.parse(readFileSync(path.join(job.dir, 'end.1.json'), 'utf8')) as { reason?: string; counted?: boolean } : undefined;
      ctx.check(end?.reason === 'released' && end.counted === false, ['EXEC-3'], `a generation whose exec record could not be published ends with an end record, reason released, counted false; got ${end === undefined ? 'no end.1.json' : `${end.reason}, counted ${end.counted}`}`, evidence);
      ctx.check(sj?.receipt?.outcome === 'succeeded' && starts === 1, ['EXEC-3', 'RETRY-1'], `the job then runs once in a later generation; receipt ${sj?.receipt?.outcome ?? 'none'}, ${starts} starts`, evidence);
    }
    for (const failure of await checkInvariants(snapshot, { accepted: [job.id] })) ctx.failures.push(failure);
  } finally {
    run.kill();
  }
}

async function receiptPublishedCase(ctx: CaseContext): Promise<void> {
  await needsInjector(ctx, 'to pause the consumer before a chosen call');
  const root = await ctx.newQueue('receipt-taken');
  const work = await ctx.subdir('receipt-taken/work');
  const log = path.join(work, 'starts.log');
  const job = await stageJob(await reopen(root), { argv: logged(log, 'job'), cwd: work });
  const failures: Failure[] = [];
  const run = await pausedConsume(ctx, root, 'jobs/*/receipt.json', ['RCPT-3'], failures);
  if (run === undefined) {
    ctx.failures.push(...failures);
    return;
  }
  try {
    const theirs: ReceiptRecord = { ...receiptRecord(job.id, 1, await selfIdentity()), message: 'published by the conformance runner while the owner was paused' };
    await plantRecord(await reopen(root), job.dir, 'receipt.json', 'receipt', theirs);
    const bytes = readFileSync(path.join(job.dir, 'receipt.json'));
    run.resume();
    const result = await run.result;
    const snapshot = await ctx.snapshot(root);
    const evidence = [describeRun(result), ...listing(snapshot, new Set([job.id]))];
    const file = path.join(job.dir, 'receipt.json');
    if (!existsSync(file)) ctx.fail(['RCPT-6', 'RCPT-3'], 'receipt.json disappeared: a receipt is never removed while its job directory exists', evidence);
    else ctx.check(readFileSync(file).equals(bytes), ['RCPT-3', 'RCPT-6'], `the owner found receipt.json published by someone else when it linked its own, and replaced it: it must not publish another or replace it (receipt now: ${readFileSync(file, 'utf8').slice(0, 200)})`, evidence);
    ctx.check((countBy(await readStarts(log)).get('job') ?? 0) === 1, ['RCPT-3', 'I2'], 'the job ran once before its receipt; it must not run again', evidence);
    for (const failure of await checkInvariants(snapshot, { accepted: [job.id] })) ctx.failures.push(failure);
  } finally {
    run.kill();
  }
}

async function receiptAfterListingCase(ctx: CaseContext): Promise<void> {
  await needsInjector(ctx, 'to pause the consumer before a chosen call');
  const root = await ctx.newQueue('late-receipt');
  const work = await ctx.subdir('late-receipt/work');
  const log = path.join(work, 'starts.log');
  const queue = await reopen(root);
  const job = await stageJob(queue, { argv: logged(log, 'job'), cwd: work });
  // An orphan whose dead owner never recorded an execution: the consumer recovers it with claim 2.
  const dead = await deadOwner();
  await plantRecord(queue, job.dir, 'claim.1.json', 'claim', claimRecord(job.id, 1, dead));
  const failures: Failure[] = [];
  const run = await pausedConsume(ctx, root, 'jobs/*/claim.2.json', ['CLAIM-6', 'RECOV-2'], failures);
  if (run === undefined) {
    ctx.failures.push(...failures);
    return;
  }
  try {
    const finished: ReceiptRecord = {
      fsjob: PROTOCOL_VERSION,
      type: 'receipt',
      job_id: job.id,
      gen: 1,
      outcome: 'cancelled',
      exit_code: 130,
      reason: null,
      message: 'published by the conformance runner after the consumer listed the job',
      attempts: 0,
      status: null,
      started_ms: null,
      finished_ms: Date.now(),
      stdout: null,
      stderr: null,
      result: null,
      by: await selfIdentity(),
    };
    await plantRecord(queue, job.dir, 'receipt.json', 'receipt', finished);
    const bytes = readFileSync(path.join(job.dir, 'receipt.json'));
    run.resume();
    const result = await run.result;
    const snapshot = await ctx.snapshot(root);
    const sj = snapshot.jobs.get(job.id);
    const evidence = [describeRun(result), ...listing(snapshot, new Set([job.id]))];
    const starts = countBy(await readStarts(log)).get('job') ?? 0;
    const more = [sj?.execs.length ? 'an exec record' : '', sj?.ends.length ? 'an end record' : '', sj?.states.length ? 'a state record' : '', existsSync(path.join(job.dir, 'receipt.json')) && !readFileSync(path.join(job.dir, 'receipt.json')).equals(bytes) ? 'another receipt' : ''].filter((w) => w !== '');
    ctx.check(starts === 0 && more.length === 0, ['CLAIM-6'], `receipt.json appeared after the consumer listed the job and before its claim 2: once claimed, the owner must publish nothing and stop (CLAIM-6 step 0); it ${starts > 0 ? `ran the job ${starts} times` : `published ${more.join(', ')}`}`, evidence);
    for (const failure of await checkInvariants(snapshot, { accepted: [job.id] })) ctx.failures.push(failure);
  } finally {
    run.kill();
  }
}

export const raceCases: ConformanceCase[] = [
  { name: 'execution/armed-handshake', clauses: ['EXEC-2', 'EXEC-3', 'RECOV-1'], level: 'consumer', strength: 'MUST', run: armedHandshakeCase },
  { name: 'execution/exec-publication-fails', clauses: ['EXEC-3', 'EXEC-2'], level: 'consumer', strength: 'MUST', run: execPublicationFailsCase },
  { name: 'receipt/already-published', clauses: ['RCPT-3', 'RCPT-6'], level: 'consumer', strength: 'MUST', run: receiptPublishedCase },
  { name: 'claim/receipt-after-listing', clauses: ['CLAIM-6', 'RECOV-2'], level: 'consumer', strength: 'MUST', run: receiptAfterListingCase },
];
