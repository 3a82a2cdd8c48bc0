/**
 * Decisions 1.1 made where 1.0 left implementations to differ (issue 13):
 * each case pins one rule with a starting state the runner builds itself
 * (staged jobs, planted records) and fails an implementation that decides
 * otherwise, naming the clause first.
 *
 * - behaviour/process-state (EXEC-13): signals, mask, descriptors, umask;
 * - behaviour/receipt-reports (RCPT-8): a cancel while retrying reports no
 *   execution; a lost receipt's started_ms and truncated;
 * - recovery/same-decision (CLAIM-10): recover publishes what a consumer would;
 * - consumer/gen-max (CLAIM-9): generation GEN_MAX never runs the job;
 * - consumer/lane-held-no-claim (LANE-4): a held lane is checked before claiming;
 * - behaviour/cancel-trap-exit0 (EXEC-14): the cause, not the exit status;
 * - consumer/role-contracts (MANIFEST-4): consume leaves a far retry; cancel
 *   of a finished job fails;
 * - behaviour/home-fallback (EXEC-6): HOME from the user database;
 * - behaviour/cwd-lexical (EXEC-5): a cwd inside the queue as written is
 *   rejected though a link resolves it outside;
 * - recovery/ready-rebuild-invalid (READY-5): priority 0 for an invalid spec.
 */
import { readdir, readFile, symlink, utimes, writeFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import path from 'node:path';
import { GEN_MAX, PROTOCOL_VERSION } from '../../src/base/constants.ts';
import { ensurePrivateDir } from '../../src/fs/safefs.ts';
import { selfIdentity } from '../../src/model/identity.ts';
import { keyHash } from '../../src/model/layout.ts';
import type { CancelRecord, EndRecord, HoldRecord, ReceiptRecord } from '../../src/records/codec.ts';
import { type CaseContext, type ConformanceCase, countBy, readStarts } from '../runner/case.ts';
import { claimRecord, deadOwner, execRecord, ownerOf, sleeper } from '../runner/fixtures.ts';
import { listing, type JobSnapshot } from '../runner/inspect.ts';
import { describeExit, run as runProcess, sleep, type ProcessResult } from '../runner/process.ts';
import { plantBytes, plantRecord, reopen, stageJob, type Staged } from '../runner/stage.ts';
import { logged, sh } from './jobs.ts';

/** Scheduling tolerance on a loaded 2-core machine, added to every bound the spec states. */
const TOLERANCE_MS = 3000;

interface Fresh {
  root: string;
  work: string;
  log: string;
  queue: Awaited<ReturnType<typeof reopen>>;
}

async function fresh(ctx: CaseContext, label: string): Promise<Fresh> {
  const root = await ctx.newQueue(label);
  const work = await ctx.subdir(`${label}/work`);
  return { root, work, log: path.join(work, 'starts.log'), queue: await reopen(root) };
}

async function cancelRecordFor(id: string, force = false): Promise<CancelRecord> {
  return { fsjob: PROTOCOL_VERSION, type: 'cancel', job_id: id, force, requested_ms: Date.now(), by: await selfIdentity(), reason: null };
}

/** The kept bytes of the output the receipt describes, or undefined. */
async function outputOf(job: JobSnapshot | undefined, stream: 'stdout' | 'stderr'): Promise<string | undefined> {
  const gen = job?.receipt?.[stream]?.gen;
  if (job === undefined || gen === undefined) return undefined;
  return readFile(path.join(job.dir, `${stream}.${gen}`), 'utf8').catch(() => undefined);
}

/** Rewrites a staged spec so that it is no longer in compact form (an invalid record, CLAIM-6 step 1). */
async function spoilSpec(job: Staged): Promise<void> {
  const file = path.join(job.dir, 'spec.json');
  const text = await readFile(file, 'utf8');
  await writeFile(file, text.replace('{"fsjob"', '{ "fsjob"'));
}

async function processStateCase(ctx: CaseContext): Promise<void> {
  const f = await fresh(ctx, 'state');
  const status = await stageJob(f.queue, { argv: ['cat', '/proc/self/status'], cwd: f.work });
  const fds = await stageJob(f.queue, { argv: ['ls', '-l', '/proc/self/fd'], cwd: f.work });
  const run = await ctx.consumeOk(f.root, ['EXEC-13']);
  const snapshot = await ctx.snapshot(f.root);
  const text = (await outputOf(snapshot.jobs.get(status.id), 'stdout')) ?? '';
  const field = (name: string): string | undefined => text.split('\n').find((l) => l.startsWith(`${name}:`))?.split(/\s+/)[1];
  const evidence = [describeExit(run), ...text.split('\n').filter((l) => /^(SigIgn|SigBlk|Umask):/.test(l))];
  ctx.check(field('SigIgn') === '0000000000000000', ['EXEC-13'], `a command starts with every signal at its default disposition; /proc/self/status says SigIgn ${field('SigIgn') ?? '?'}`, evidence);
  ctx.check(field('SigBlk') === '0000000000000000', ['EXEC-13'], `a command starts with an empty signal mask; SigBlk ${field('SigBlk') ?? '?'}`, evidence);
  ctx.check(field('Umask') === '0022', ['EXEC-13'], `a command starts with umask 0022; Umask ${field('Umask') ?? '?'}`, evidence);
  const listed = (await outputOf(snapshot.jobs.get(fds.id), 'stdout')) ?? '';
  // Descriptors the runner itself passes to every role (inherited from whatever
  // started it) are the consumer's inheritance, which EXEC-13 only advises
  // against passing on: a probe started the way roles are tells them.
  const inherited = new Set(descriptorsOf((await runProcess(['ls', '-l', '/proc/self/fd'], { timeoutMs: 30_000 })).stdout).map(([fd]) => fd));
  // ls's own directory descriptor on /proc/self/fd is the one extra allowed.
  const extra = descriptorsOf(listed)
    .filter(([fd, target]) => fd > 2 && !inherited.has(fd) && !/^\/proc\/[0-9]+\/fd$/.test(target))
    .map(([fd, target]) => `${fd} -> ${target}`);
  ctx.check(listed !== '' && extra.length === 0, ['EXEC-13'], `a command starts with no descriptor but 0, 1 and 2 opened by the consumer; it had ${extra.join(', ') || '(no listing)'}`, [describeExit(run)]);
}

/** The descriptors of an `ls -l /proc/self/fd` listing: [fd, target]. */
function descriptorsOf(listing: string): [number, string][] {
  return listing
    .split('\n')
    .map((l) => /\s([0-9]+) -> (.*)$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => [Number(m[1]), m[2] ?? '']);
}

async function receiptReportsCase(ctx: CaseContext): Promise<void> {
  const f = await fresh(ctx, 'reports');
  // (a) attempt 1 fails, the retry is 10 minutes away, then a cancel: the receipt reports no execution.
  const failing = await stageJob(f.queue, { argv: logged(f.log, 'failing', 'exit 3'), cwd: f.work, max_attempts: 2, retry_delay_ms: 600_000 });
  const first = await ctx.consumeOk(f.root, ['RETRY-3', 'MANIFEST-4']);
  let snapshot = await ctx.snapshot(f.root);
  const ended = snapshot.jobs.get(failing.id)?.ends.includes(1) === true;
  if (!ctx.check(ended, ['RETRY-3'], 'attempt 1 failed with an attempt left: an end record, not a receipt', [describeExit(first), ...listing(snapshot, new Set([failing.id]))])) return;
  await plantRecord(f.queue, failing.dir, 'cancel.json', 'cancel', await cancelRecordFor(failing.id));
  // (b) a dead owner's last attempt, with max_output_bytes 0: lost, nothing known to be discarded.
  const lostJob = await stageJob(f.queue, { argv: logged(f.log, 'lost'), cwd: f.work, max_attempts: 1, max_output_bytes: 0 });
  const dead = await deadOwner();
  await plantRecord(f.queue, lostJob.dir, 'claim.1.json', 'claim', claimRecord(lostJob.id, 1, dead, Date.now() - 5000));
  const exec = execRecord(lostJob.id, 1, dead);
  await plantRecord(f.queue, lostJob.dir, 'exec.1.json', 'exec', exec);
  await plantBytes(path.join(lostJob.dir, 'stdout.1'), '');
  await plantBytes(path.join(lostJob.dir, 'stderr.1'), '');
  const second = await ctx.consumeOk(f.root, ['RCPT-8']);
  snapshot = await ctx.snapshot(f.root);
  const evidence = [describeExit(second), ...listing(snapshot, new Set([failing.id, lostJob.id]))];
  const cancelled: ReceiptRecord | undefined = snapshot.jobs.get(failing.id)?.receipt;
  ctx.check(
    cancelled?.outcome === 'cancelled' && cancelled.status === null && cancelled.started_ms === null && cancelled.stdout === null && cancelled.stderr === null && cancelled.attempts === 1,
    ['RCPT-8', 'RCPT-5'],
    `a job cancelled while retrying gets a receipt that reports no execution (status, started_ms, stdout, stderr null) and counts attempt 1; got ${JSON.stringify(cancelled && { outcome: cancelled.outcome, status: cancelled.status, started_ms: cancelled.started_ms, stdout: cancelled.stdout, attempts: cancelled.attempts })}`,
    evidence,
  );
  const lost = snapshot.jobs.get(lostJob.id)?.receipt;
  ctx.check(
    lost?.outcome === 'lost' && lost.reason === 'owner_lost' && lost.started_ms === exec.recorded_ms && lost.stdout?.bytes_total === null && lost.stdout.truncated === false,
    ['RCPT-8', 'RECOV-1'],
    `a lost receipt reports the dead generation: started_ms = its exec record's recorded_ms (${exec.recorded_ms}), bytes_total null, truncated false when max_output_bytes is 0; got ${JSON.stringify(lost && { outcome: lost.outcome, reason: lost.reason, started_ms: lost.started_ms, stdout: lost.stdout })}`,
    evidence,
  );
}

async function sameDecisionCase(ctx: CaseContext): Promise<void> {
  const f = await fresh(ctx, 'same');
  const plantDead = async (job: Staged): Promise<void> => {
    const dead = await deadOwner();
    await plantRecord(f.queue, job.dir, 'claim.1.json', 'claim', claimRecord(job.id, 1, dead, Date.now() - 5000));
    await plantRecord(f.queue, job.dir, 'exec.1.json', 'exec', execRecord(job.id, 1, dead));
  };
  // Both jobs' only attempt died with its owner: without CLAIM-10's order, a recoverer says lost.
  const cancelled = await stageJob(f.queue, { argv: logged(f.log, 'cancelled'), cwd: f.work, max_attempts: 1 });
  await plantDead(cancelled);
  await plantRecord(f.queue, cancelled.dir, 'cancel.json', 'cancel', await cancelRecordFor(cancelled.id));
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

async function genMaxCase(ctx: CaseContext): Promise<void> {
  const f = await fresh(ctx, 'genmax');
  const job = await stageJob(f.queue, { argv: logged(f.log, 'victim'), cwd: f.work });
  // Generation GEN_MAX-1 ended without an execution (a lane race or a release,
  // counted false). Only the highest generation decides what comes next
  // (STATUS-1, CLAIM-4), so the 9998 below it are not planted: they would cost
  // 20,000 files and tell the consumer nothing more.
  const self = await selfIdentity();
  const now = Date.now();
  const top = GEN_MAX - 1;
  await plantRecord(f.queue, job.dir, `claim.${top}.json`, 'claim', claimRecord(job.id, top, self, now - 60_000));
  const end: EndRecord = { fsjob: PROTOCOL_VERSION, type: 'end', job_id: job.id, gen: top, reason: 'released', counted: false, retry_at_ms: now - 60_000, status: null, ended_ms: now - 60_000 };
  await plantRecord(f.queue, job.dir, `end.${top}.json`, 'end', end);
  // RECOV-4: a second job whose claim GEN_MAX is open, its owner dead (it died before its receipt).
  const orphan = await stageJob(f.queue, { argv: logged(f.log, 'orphan'), cwd: f.work });
  await plantRecord(f.queue, orphan.dir, `claim.${GEN_MAX}.json`, 'claim', claimRecord(orphan.id, GEN_MAX, await deadOwner(), now - 60_000));
  const run = await ctx.consumeOk(f.root, ['CLAIM-9']);
  const snapshot = await ctx.snapshot(f.root);
  // CLAIM-4 first: a claim numbered past GEN_MAX is the cause; whatever the
  // receipts say after it is a consequence.
  const past: string[] = [];
  for (const staged of [job, orphan]) {
    for (const name of await readdir(staged.dir).catch(() => [] as string[])) {
      const n = /^claim\.([0-9]+)\.json$/.exec(name)?.[1];
      if (n !== undefined && Number(n) > GEN_MAX) past.push(`jobs/${staged.id}/${name}`);
    }
  }
  if (!ctx.check(past.length === 0, ['CLAIM-4'], `no claim may be created past GEN_MAX (${GEN_MAX}), neither for a job whose generation ${GEN_MAX - 1} ended nor for one whose claim ${GEN_MAX} has a dead owner; found ${past.join(' ')}`, [describeExit(run), ...listing(snapshot)])) return;
  const seen = snapshot.jobs.get(job.id);
  const starts = countBy(await readStarts(f.log));
  const receipt = seen?.receipt;
  const evidence = [describeExit(run), `claims up to ${seen?.claims.at(-1) ?? 0}, executions ${seen?.execs.join(',') || 'none'}`, `receipt ${JSON.stringify(receipt && { gen: receipt.gen, outcome: receipt.outcome, reason: receipt.reason, exit_code: receipt.exit_code })}`];
  ctx.check(
    (starts.get('victim') ?? 0) === 0 && !(seen?.execs.includes(GEN_MAX) ?? false) && receipt?.outcome === 'lost' && receipt.reason === 'claim_limit' && receipt.gen === GEN_MAX,
    ['CLAIM-9', 'CLAIM-4'],
    `generation GEN_MAX (${GEN_MAX}) must never run the job: its owner publishes a lost receipt with reason claim_limit; ${starts.get('victim') ?? 0} starts`,
    evidence,
  );
  const finished = snapshot.jobs.get(orphan.id)?.receipt;
  ctx.check(
    (starts.get('orphan') ?? 0) === 0 && finished?.outcome === 'lost' && finished.reason === 'claim_limit' && finished.gen === GEN_MAX,
    ['RECOV-4', 'CLAIM-4', 'RECOV-3'],
    `a job whose claim GEN_MAX is open with a dead owner is finished by the recoverer without a claim: lost, claim_limit, gen ${GEN_MAX}; got ${JSON.stringify(finished && { gen: finished.gen, outcome: finished.outcome, reason: finished.reason })}`,
    [describeExit(run), ...listing(snapshot, new Set([orphan.id]))],
  );
}

async function stagingOfPublishedCase(ctx: CaseContext): Promise<void> {
  const f = await fresh(ctx, 'temp2');
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

async function laneHeldCase(ctx: CaseContext): Promise<void> {
  const f = await fresh(ctx, 'lanes');
  const lane = 'held lane';
  const holder = await stageJob(f.queue, { argv: logged(f.log, 'holder'), cwd: f.work, lane });
  const waiter = await stageJob(f.queue, { argv: logged(f.log, 'waiter'), cwd: f.work, lane });
  const live = await sleeper();
  try {
    const owner = await ownerOf(live.pid, live.start);
    await plantRecord(f.queue, holder.dir, 'claim.1.json', 'claim', claimRecord(holder.id, 1, owner));
    await plantRecord(f.queue, holder.dir, 'exec.1.json', 'exec', execRecord(holder.id, 1, owner));
    const dir = path.join(f.root, 'lanes', keyHash(lane));
    await ensurePrivateDir(dir, f.queue.fsOptions);
    const hold: HoldRecord = { fsjob: PROTOCOL_VERSION, type: 'hold', kind: 'lane', key: lane, job_id: holder.id, gen: 1, owner, created_ms: Date.now() };
    await plantRecord(f.queue, dir, '1.json', 'hold', hold);
    const run = await ctx.role('consume', { queue: f.root });
    const snapshot = await ctx.snapshot(f.root);
    const seen = snapshot.jobs.get(waiter.id);
    const evidence = [describeExit(run), ...listing(snapshot, new Set([holder.id, waiter.id]))];
    ctx.check((seen?.claims.length ?? 0) === 0, ['LANE-4', 'LANE-2'], `a job whose lane is held by a live owner must not be claimed (the check comes before the claim, so no generation is spent on lane_busy); it has claims ${seen?.claims.join(',')}`, evidence);
    ctx.check(!run.timedOut, ['MANIFEST-4'], 'consume must finish when the only runnable job waits behind a lane another live owner holds', evidence);
  } finally {
    await live.stop();
  }
}

async function cancelTrapCase(ctx: CaseContext): Promise<void> {
  const f = await fresh(ctx, 'trap');
  // The trap is set before the start line: a SIGTERM the case's cancel causes always finds it.
  const job = await stageJob(f.queue, { argv: sh(`trap 'exit 0' TERM; printf 'start %s\\n' "$1" >> "$2"; while :; do sleep 0.1; done`, 'trap', f.log), cwd: f.work });
  const consumer = ctx.startRole('consume', { queue: f.root });
  const began = Date.now();
  while ((await readStarts(f.log)).length === 0 && Date.now() - began < 60_000) await sleep(100);
  if ((await readStarts(f.log)).length === 0) {
    consumer.kill();
    ctx.fail(['EXEC-3', 'MANIFEST-1'], 'the command never started, so it could not be cancelled', [describeExit(await consumer.done)]);
    return;
  }
  await plantRecord(f.queue, job.dir, 'cancel.json', 'cancel', await cancelRecordFor(job.id));
  const run = await consumer.done;
  const snapshot = await ctx.snapshot(f.root);
  const receipt = snapshot.jobs.get(job.id)?.receipt;
  ctx.check(
    receipt?.outcome === 'cancelled' && receipt.exit_code === 130 && receipt.status?.exit === 0,
    ['EXEC-14', 'CANCEL-3', 'EXEC-10'],
    `a command that traps SIGTERM and exits 0 during a cancel's grace is cancelled (130), its status exit 0; got ${JSON.stringify(receipt && { outcome: receipt.outcome, exit_code: receipt.exit_code, status: receipt.status })}`,
    [describeExit(run), ...listing(snapshot, new Set([job.id]))],
  );
}

async function roleContractsCase(ctx: CaseContext): Promise<void> {
  const f = await fresh(ctx, 'roles');
  // A retry an hour away is not one this consume can make progress on.
  await stageJob(f.queue, { argv: logged(f.log, 'later', 'exit 1'), cwd: f.work, max_attempts: 2, retry_delay_ms: 3_600_000 });
  // Running the job and leaving its retry takes seconds; 45 s is far past that.
  const run = await ctx.role('consume', { queue: f.root }, { timeoutMs: 45_000 });
  if (!ctx.check(run.code === 0 && !run.timedOut, ['MANIFEST-4'], `consume must exit 0 once the only job left retries more than CONSUME_RETRY_WAIT (60 s) away, not wait for it; ${describeExit(run)}`)) return;
  if (ctx.impl.roles.cancel !== undefined) {
    const done = await stageJob(f.queue, { argv: logged(f.log, 'done'), cwd: f.work });
    await ctx.consumeOk(f.root, ['MANIFEST-4']);
    const cancel = await ctx.role('cancel', { queue: f.root, id: done.id });
    ctx.check(cancel.code === 1, ['MANIFEST-4', 'CANCEL-1'], `cancel of a finished job must fail with exit 1; ${describeExit(cancel)}`);
  }
}

async function homeFallbackCase(ctx: CaseContext): Promise<void> {
  const f = await fresh(ctx, 'home');
  const job = await stageJob(f.queue, { argv: sh('printf "%s" "$HOME"'), cwd: f.work });
  const run = await ctx.consumeOk(f.root, ['EXEC-6'], { env: { HOME: 'not-absolute' } });
  const snapshot = await ctx.snapshot(f.root);
  const home = await outputOf(snapshot.jobs.get(job.id), 'stdout');
  let expected = '/';
  try {
    if (userInfo().homedir.startsWith('/')) expected = userInfo().homedir;
  } catch {
    // no user database entry: "/"
  }
  ctx.check(home === expected, ['EXEC-6'], `with HOME not absolute in the consumer's environment the command's HOME is the user database's home (${expected}); got ${JSON.stringify(home)}`, [describeExit(run)]);
}

async function cwdLexicalCase(ctx: CaseContext): Promise<void> {
  const f = await fresh(ctx, 'lexical');
  const outside = await ctx.subdir('lexical/outside');
  // Inside the queue as written, outside once the link is resolved: EXEC-5 judges both ways.
  await symlink(outside, path.join(f.root, 'cwd-link'));
  const job = await stageJob(f.queue, { argv: logged(f.log, 'lexical'), cwd: path.join(f.root, 'cwd-link') });
  const run = await ctx.consumeOk(f.root, ['EXEC-5']);
  const snapshot = await ctx.snapshot(f.root);
  const receipt = snapshot.jobs.get(job.id)?.receipt;
  const starts = countBy(await readStarts(f.log)).get('lexical') ?? 0;
  ctx.check(
    receipt?.outcome === 'rejected' && receipt.reason === 'cwd_unusable' && starts === 0,
    ['EXEC-5', 'SEC-8'],
    `a cwd inside the queue root as written (${path.join(f.root, 'cwd-link')}), though a link resolves it outside, must be rejected cwd_unusable; got ${receipt?.outcome ?? 'no receipt'} ${receipt?.reason ?? ''}, ${starts} starts`,
    [describeExit(run), ...listing(snapshot, new Set([job.id]))],
  );
}

async function readyRebuildCase(ctx: CaseContext): Promise<void> {
  const f = await fresh(ctx, 'rebuild');
  const job = await stageJob(f.queue, { argv: logged(f.log, 'invalid'), cwd: f.work, priority: 7 }, { ready: false });
  await spoilSpec(job);
  const run = await ctx.role('recover', { queue: f.root });
  const snapshot = await ctx.snapshot(f.root);
  const names = snapshot.ready.map((e) => e.name);
  ctx.check(names.includes(`1000-${job.id}`), ['READY-5', 'READY-4'], `recover must rebuild the missing ready entry of a job whose spec is invalid with priority 0: ready/1000-${job.id}; ready/ holds ${names.join(' ') || 'nothing'}`, [describeExit(run)]);
}

export const decisionCases: ConformanceCase[] = [
  { name: 'behaviour/process-state', clauses: ['EXEC-13'], level: 'consumer', strength: 'MUST', run: processStateCase },
  { name: 'behaviour/receipt-reports', clauses: ['RCPT-8', 'RCPT-5', 'RETRY-3', 'RECOV-1', 'MANIFEST-4'], level: 'consumer', strength: 'MUST', run: receiptReportsCase },
  { name: 'recovery/same-decision', clauses: ['CLAIM-10', 'RECOV-1', 'CLAIM-6'], level: 'consumer', strength: 'MUST', run: sameDecisionCase },
  { name: 'consumer/gen-max', clauses: ['CLAIM-9', 'CLAIM-4', 'RECOV-4', 'RECOV-3'], level: 'consumer', strength: 'MUST', run: genMaxCase },
  { name: 'consumer/lane-held-no-claim', clauses: ['LANE-4', 'LANE-2', 'MANIFEST-4'], level: 'consumer', strength: 'MUST', features: ['lanes'], run: laneHeldCase },
  { name: 'behaviour/cancel-trap-exit0', clauses: ['EXEC-14', 'CANCEL-3', 'EXEC-10'], level: 'consumer', strength: 'MUST', run: cancelTrapCase },
  { name: 'consumer/role-contracts', clauses: ['MANIFEST-4', 'CANCEL-1'], level: 'consumer', strength: 'MUST', run: roleContractsCase },
  { name: 'behaviour/home-fallback', clauses: ['EXEC-6'], level: 'consumer', strength: 'MUST', run: homeFallbackCase },
  { name: 'behaviour/cwd-lexical', clauses: ['EXEC-5', 'SEC-8'], level: 'consumer', strength: 'MUST', run: cwdLexicalCase },
  { name: 'recovery/ready-rebuild-invalid', clauses: ['READY-5', 'READY-4'], level: 'consumer', strength: 'MUST', roles: ['recover'], run: readyRebuildCase },
  { name: 'recovery/staging-of-published', clauses: ['TEMP-2', 'TEMP-1'], level: 'consumer', strength: 'MUST', roles: ['recover'], run: stagingOfPublishedCase },
];

export { TOLERANCE_MS };
