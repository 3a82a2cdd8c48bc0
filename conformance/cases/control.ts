/**
 * The cases of spec/control.md: what holds a published job back, stops it
 * or runs it again, and what an operator relies on a consumer for. Jobs are
 * staged by the runner (the reference producer's records) where only the
 * consumer is under test; each case checks the cause first, so the clause a
 * broken consumer breaks is the first failure.
 *
 * - consumer/delayed-start (DELAY-1): not claimed before not_before_ms;
 * - consumer/paused-queue (PAUSE-1): nothing claimed while pause.json exists,
 *   not even the next generation over an orphan's claim;
 * - consumer/cancel-running, consumer/cancel-force-running (CANCEL-3): a
 *   graceful cancel reaches a running command as SIGTERM within
 *   CONTROL_LATENCY and as SIGKILL only after CANCEL_GRACE; a forced one as
 *   SIGKILL at once, also during a graceful grace;
 * - consumer/role-contracts (MANIFEST-4, CANCEL-1): consume leaves a far
 *   retry; cancel of a finished job fails.
 *
 * The retry time and the delayed start under a wall clock that is off are
 * control-clock.ts's.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { existsSync } from 'node:fs';
import { CANCEL_GRACE, CONSUME_RETRY_WAIT, CONTROL_LATENCY } from '../../src/base/constants.ts';
import { pauseQueue } from '../../src/model/pause.ts';
import type { CaseContext, ConformanceCase } from '../runner/case.ts';
import { checkInvariants, listing } from '../runner/inspect.ts';
import { describeExit } from '../runner/process.ts';
import { freshQueue, plantRecord, reopen, stageJob } from '../runner/stage.ts';
import { claimRecord, deadOwner } from '../runner/fixtures.ts';
import type { Failure } from '../runner/report.ts';
import { logged, sh } from './jobs.ts';
import { bound, groupLives, killGroupNow, probe, readProbeLog, SCHEDULING_TOLERANCE_MS, waitFor } from './probes.ts';
import { consumerExit, startRunning } from './running-job.ts';

async function claimOf(queue: string, id: string, gen = 1): Promise<{ claimed_ms: number } | undefined> {
  try {
    return JSON.parse(await readFile(path.join(queue, 'jobs', id, `claim.${gen}.json`), 'utf8')) as { claimed_ms: number };
  } catch {
    return undefined;
  }
}

/**
 * DELAY-1: a job delayed well past CONSUME_RETRY_WAIT is not claimed (consume
 * exits 0 without waiting for it, MANIFEST-4); one delayed a few seconds is
 * waited for and claimed at or after its instant, by the consumer's clock
 * (the runner's: same host); a cancel still ends the far one at once.
 */
async function delayedStart(ctx: CaseContext): Promise<void> {
  const root = await ctx.newQueue('delayed');
  const queue = await reopen(root);
  const work = await ctx.subdir('delayed/work');
  const now = Date.now();
  const far = await stageJob(queue, { argv: sh('echo far'), cwd: work, not_before_ms: now + CONSUME_RETRY_WAIT + 3_600_000 });
  const near = await stageJob(queue, { argv: sh('echo near'), cwd: work, not_before_ms: now + 3_000 });
  const free = await stageJob(queue, { argv: sh('echo free'), cwd: work });
  const consumed = await ctx.role('consume', { queue: root });
  const snapshot = await ctx.snapshot(root);
  const evidence = [describeExit(consumed), ...listing(snapshot, new Set([far.id, near.id]))];
  const farClaim = await claimOf(root, far.id);
  ctx.check(farClaim === undefined, ['DELAY-1'], `a job whose not_before_ms lies an hour ahead was claimed (claim.1.json at ${farClaim?.claimed_ms}, not before ${far.spec.not_before_ms})`, evidence);
  const nearClaim = await claimOf(root, near.id);
  const notBefore = near.spec.not_before_ms ?? 0;
  if (nearClaim !== undefined) {
    ctx.check(nearClaim.claimed_ms >= notBefore, ['DELAY-1'], `a job delayed until ${notBefore} was claimed at ${nearClaim.claimed_ms}, ${notBefore - nearClaim.claimed_ms} ms early`, evidence);
  }
  ctx.check(consumed.code === 0, ['MANIFEST-4'], 'consume must exit 0 when only a far delayed job remains', evidence);
  ctx.check(snapshot.jobs.get(free.id)?.receipt?.outcome === 'succeeded', ['CLAIM-1'], 'the job without a delay must run', evidence);
  ctx.check(
    snapshot.jobs.get(near.id)?.receipt?.outcome === 'succeeded',
    ['DELAY-1', 'MANIFEST-4'],
    `a job delayed by 3 s (less than CONSUME_RETRY_WAIT, ${CONSUME_RETRY_WAIT} ms) must be waited for and run; receipt ${snapshot.jobs.get(near.id)?.receipt?.outcome ?? 'none'}`,
    evidence,
  );
  if (ctx.impl.roles.cancel !== undefined) {
    const cancelled = await ctx.role('cancel', { queue: root, id: far.id });
    const after = await ctx.snapshot(root);
    ctx.check(
      cancelled.code === 0 && after.jobs.get(far.id)?.receipt?.outcome === 'cancelled',
      ['DELAY-1', 'CANCEL-2'],
      `cancelling a delayed job ends it at once: exit ${cancelled.code}, receipt ${after.jobs.get(far.id)?.receipt?.outcome ?? 'none'}`,
      listing(after, new Set([far.id])),
    );
    for (const failure of await checkInvariants(after, { accepted: [far.id, near.id, free.id] })) ctx.failures.push(failure);
  }
}

/**
 * PAUSE-1: with a pause record in the root, and then with garbage at that
 * name (its existence decides, not its content), consume claims nothing and
 * exits 0; once the name is gone the jobs run.
 */
async function pausedQueue(ctx: CaseContext): Promise<void> {
  const root = await ctx.newQueue('paused');
  const queue = await reopen(root);
  const work = await ctx.subdir('paused/work');
  const ids = [(await stageJob(queue, { argv: sh('echo one'), cwd: work })).id, (await stageJob(queue, { argv: sh('echo two'), cwd: work })).id];
  // An orphan (a dead owner's open claim, nothing recorded): breaking its
  // claim is a claim too, so a paused consumer leaves it (RECOV-2 waits).
  const orphan = await stageJob(queue, { argv: sh('echo orphan'), cwd: work });
  await plantRecord(queue, orphan.dir, 'claim.1.json', 'claim', claimRecord(orphan.id, 1, await deadOwner(), Date.now() - 5000));
  const pauseFile = path.join(root, 'pause.json');
  await pauseQueue(queue, { reason: 'conformance: paused-queue' });
  const claimed = async (): Promise<string[]> => [
    ...(await Promise.all(ids.map(async (id) => ((await claimOf(root, id)) === undefined ? [] : [id])))).flat(),
    ...((await claimOf(root, orphan.id, 2)) === undefined ? [] : [`${orphan.id} (claim.2.json over the orphan's claim)`]),
  ];
  for (const what of ['a pause record', 'an invalid pause.json']) {
    if (what !== 'a pause record') {
      await rm(pauseFile, { force: true });
      await writeFile(pauseFile, 'not a record\n', { mode: 0o600, flag: 'wx' });
    }
    const paused = await ctx.role('consume', { queue: root });
    const taken = await claimed();
    const snapshot = await ctx.snapshot(root);
    if (!ctx.check(taken.length === 0, ['PAUSE-1'], `with ${what} in the queue root, consume claimed ${taken.join(', ')}`, [describeExit(paused), ...listing(snapshot)])) return;
    ctx.check(paused.code === 0, ['MANIFEST-4'], `consume on a paused queue must exit 0 (with ${what})`, [describeExit(paused)]);
  }
  await rm(pauseFile, { force: true });
  const resumed = await ctx.consumeOk(root, ['PAUSE-1']);
  const snapshot = await ctx.snapshot(root);
  const all = [...ids, orphan.id];
  const ran = all.filter((id) => snapshot.jobs.get(id)?.receipt?.outcome === 'succeeded');
  ctx.check(ran.length === all.length, ['PAUSE-1', 'CLAIM-1', 'RECOV-2'], `once pause.json is gone the jobs run, the orphan recovered first; ${ran.length} of ${all.length} did`, [describeExit(resumed), ...listing(snapshot)]);
  for (const failure of await checkInvariants(snapshot, { accepted: all })) ctx.failures.push(failure);
}

/**
 * CANCEL-3 with a command that logs the SIGTERM it gets and ignores it (a
 * probe): a graceful cancel must reach it as SIGTERM within CONTROL_LATENCY
 * and as SIGKILL only after CANCEL_GRACE; a forced one as SIGKILL within
 * CONTROL_LATENCY, never SIGTERM first, also during a graceful grace. The
 * request counts from the moment the runner first sees the cancel record
 * (it polls while the cancel role runs), the reaction from the probe's own
 * log and from the runner's look at the group in /proc.
 */
interface CancelFlow {
  label: string;
  /** Cancel roles used, in order; the second comes once the first was acted on. */
  steps: ('cancel' | 'cancel_force')[];
}

async function cancelFlow(ctx: CaseContext, flow: CancelFlow): Promise<Failure[]> {
  const failures: Failure[] = [];
  const fail = (clauses: string[], message: string, evidence: string[]): void => void failures.push({ clauses, message, evidence });
  const queue = await ctx.newQueue(flow.label);
  const work = await ctx.subdir(`${flow.label}/work`);
  const log = path.join(work, 'probe.log');
  // max_attempts 3: a cancelled job is never retried (CANCEL-3), attempts left or not.
  const run = await startRunning(ctx, queue, { argv: probe(log, 'run', { onTerm: 'ignore' }), cwd: work, timeout_ms: 300_000, kill_grace_ms: 1000, max_attempts: 3 }, 'run', log);
  if (run === undefined) return failures;
  const latency = CONTROL_LATENCY + SCHEDULING_TOLERANCE_MS;
  const evidence = async (): Promise<string[]> => [...(await readProbeLog(log)).lines.slice(0, 8).map((l) => `probe: ${l}`), ...listing(await ctx.snapshot(queue), new Set([run.id]))];
  try {
    let forced = false;
    // After a timing failure the runner kills the command itself: what follows would be its consequence.
    let cleanedUp = false;
    for (const [index, role] of flow.steps.entries()) {
      const record = path.join(run.jobDir, role === 'cancel' ? 'cancel.json' : 'cancel-force.json');
      let seen: number | undefined;
      const asking = ctx.role(role, { queue, id: run.id });
      let asked = false;
      void asking.then(() => (asked = true));
      await waitFor(() => {
        if (seen === undefined && existsSync(record)) seen = Date.now();
        return asked;
      }, 600_000, 10);
      const result = await asking;
      seen ??= existsSync(record) ? Date.now() : undefined;
      if (existsSync(path.join(run.jobDir, 'claim.2.json'))) {
        fail(['CANCEL-2', 'CLAIM-3'], `${role} took claim.2.json of a job whose claim 1 is open with a live owner: a canceller claims only a job without an open claim; the owner acts on the request`, [describeExit(result), ...(await evidence())]);
        return failures;
      }
      if (result.code !== 0 || seen === undefined) {
        fail(['CANCEL-1'], `${role} of a running job must succeed and publish ${path.basename(record)}`, [describeExit(result), ...(await evidence())]);
        return failures;
      }
      if (role === 'cancel_force') {
        forced = true;
        const gone = await waitFor(() => !groupLives(run.pgid), latency, 20);
        const took = Date.now() - seen;
        if (!gone) {
          fail(['CANCEL-3'], `the command (group ${run.pgid}, ignoring SIGTERM) still ran ${took} ms after cancel-force.json appeared${index > 0 ? ', during the grace of a graceful cancel' : ''}: a forced cancel kills the group at once, within ${bound('CONTROL_LATENCY', CONTROL_LATENCY)}`, await evidence());
          killGroupNow(run.pgid);
          cleanedUp = true;
          break;
        } else if (index === 0 && (await readProbeLog(log)).terms('run').length > 0) {
          fail(['CANCEL-3'], 'a forced cancel sent SIGTERM before SIGKILL: force is SIGKILL at once', await evidence());
        }
        continue;
      }
      // Graceful: SIGTERM within CONTROL_LATENCY ...
      const termed = await waitFor(async () => (await readProbeLog(log)).terms('run').length > 0 || !groupLives(run.pgid), latency, 20);
      const term = (await readProbeLog(log)).terms('run')[0];
      if (!termed || term === undefined) {
        fail(['CANCEL-3'], groupLives(run.pgid) ? `the command got no SIGTERM within ${bound('CONTROL_LATENCY', CONTROL_LATENCY)} of cancel.json` : 'a graceful cancel killed the command without a SIGTERM first', await evidence());
        killGroupNow(run.pgid);
        return failures;
      }
      if (term - seen > latency) fail(['CANCEL-3'], `the command got its SIGTERM ${term - seen} ms after cancel.json appeared: the owner acts on a cancel record within ${bound('CONTROL_LATENCY', CONTROL_LATENCY)}`, await evidence());
      if (flow.steps[index + 1] === 'cancel_force') continue;
      // ... and SIGKILL only after CANCEL_GRACE (the probe ignores SIGTERM).
      const early = await waitFor(() => !groupLives(run.pgid), Math.max(0, term + CANCEL_GRACE - SCHEDULING_TOLERANCE_MS - Date.now()), 50);
      if (early) fail(['CANCEL-3'], `the command was killed ${Date.now() - term} ms after its SIGTERM: a graceful cancel sends SIGKILL only after CANCEL_GRACE (${CANCEL_GRACE} ms, less ${SCHEDULING_TOLERANCE_MS} ms tolerance)`, await evidence());
      else if (!(await waitFor(() => !groupLives(run.pgid), Math.max(0, term + CANCEL_GRACE + SCHEDULING_TOLERANCE_MS - Date.now()), 50))) {
        fail(['CANCEL-3'], `the command (ignoring SIGTERM) still ran ${Date.now() - term} ms after its SIGTERM: SIGKILL is due after ${bound('CANCEL_GRACE', CANCEL_GRACE)}`, await evidence());
        killGroupNow(run.pgid);
        cleanedUp = true;
      }
    }
    const done = await consumerExit(ctx, run.consumer, ['CANCEL-3']);
    if (cleanedUp) return failures;
    const snapshot = await ctx.snapshot(queue);
    const job = snapshot.jobs.get(run.id);
    const after = [describeExit(done), ...listing(snapshot, new Set([run.id]))];
    const want = forced ? { outcome: 'force_stopped', exit_code: 137 } : { outcome: 'cancelled', exit_code: 130 };
    if (job?.receipt?.outcome !== want.outcome || job.receipt.exit_code !== want.exit_code) fail(['CANCEL-3', 'EXEC-10'], `a ${forced ? 'forced' : 'graceful'} cancel of a running job ends ${want.outcome} (${want.exit_code}); got ${job?.receipt === undefined ? 'no receipt' : `${job.receipt.outcome} (${job.receipt.exit_code})`}`, after);
    if (job?.ends.includes(1) === true) fail(['CANCEL-3', 'RETRY-3'], 'the cancelled attempt ended with an end record (a retry): a cancelled job is never retried, attempts left or not', after);
    failures.push(...(await checkInvariants(snapshot, { accepted: [run.id] })));
    return failures;
  } finally {
    run.consumer.kill();
    if (groupLives(run.pgid)) killGroupNow(run.pgid);
  }
}

function cancelCase(flows: CancelFlow[]): (ctx: CaseContext) => Promise<void> {
  return async (ctx) => {
    const usable = flows.filter((flow) => flow.steps.every((role) => ctx.impl.roles[role] !== undefined));
    if (usable.length < flows.length) ctx.note(`${flows.length - usable.length} flow(s) need a cancel role ${ctx.impl.name} lacks`);
    const results = await Promise.all(usable.map((flow) => cancelFlow(ctx, flow)));
    for (const failures of results) ctx.failures.push(...failures);
  };
}

async function roleContractsCase(ctx: CaseContext): Promise<void> {
  const f = await freshQueue(ctx, 'roles');
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

export const controlCases: ConformanceCase[] = [
  { name: 'consumer/delayed-start', clauses: ['DELAY-1', 'MANIFEST-4'], level: 'consumer', strength: 'MUST', run: delayedStart },
  { name: 'consumer/paused-queue', clauses: ['PAUSE-1', 'MANIFEST-4', 'RECOV-2'], level: 'consumer', strength: 'MUST', run: pausedQueue },
  { name: 'consumer/cancel-running', clauses: ['CANCEL-3', 'CANCEL-2', 'EXEC-10'], level: 'consumer', strength: 'MUST', roles: ['cancel'], idle: true, run: cancelCase([{ label: 'graceful', steps: ['cancel'] }]) },
  {
    name: 'consumer/cancel-force-running',
    clauses: ['CANCEL-3', 'CANCEL-2', 'EXEC-10'],
    level: 'consumer',
    strength: 'MUST',
    roles: ['cancel_force'],
    run: cancelCase([
      { label: 'force', steps: ['cancel_force'] },
      { label: 'force-in-grace', steps: ['cancel', 'cancel_force'] },
    ]),
  },
  { name: 'consumer/role-contracts', clauses: ['MANIFEST-4', 'CANCEL-1'], level: 'consumer', strength: 'MUST', run: roleContractsCase },
];
