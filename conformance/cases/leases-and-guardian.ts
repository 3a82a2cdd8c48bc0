/**
 * The cases of spec/leases-and-guardian.md. Fencing: what keeps one job from
 * running twice at once when its owner stops running, dies, or is judged by
 * a clock it cannot trust. ownership/guardian (WORKER-2): the consumer is
 * SIGKILLed while its command runs; the command must be stopped within
 * GUARDIAN_LIMIT, and recovery then ends the job `lost` (RECOV-1 step 3).
 * An owner whose own clock jumps is leases-and-guardian-clock.ts's.
 *
 * identity/paused-owner. A paused owner (LEASE-2, LEASE-5, LEASE-6, issue 13 point 13): an owner that
 * does not run (SIGSTOP, a filesystem call that hangs) cannot fence itself, so
 * its guardian must stop its command once the claim has gone lease_ms without
 * a renewal; a judge on another host breaks the claim only after that
 * (LEASE-3), so the job never runs twice at once.
 *
 * Consumer A runs in its own pid namespace (`unshare --pid`), so that consumer
 * B, in the runner's namespace, judges A as a foreign owner: by its lease,
 * never by its process. A runs a job (max_attempts 1) whose command writes a
 * tick every 200 ms to a file outside the queue; the case SIGSTOPs A (only the
 * consumer process: its guardian and the command keep running) and runs B
 * until the job has a receipt. Then it checks, from the ticks, the records'
 * own times and the start log:
 *
 * - LEASE-5: A's command stopped within lease_ms + GUARDIAN_LIMIT of A's last
 *   renewal (plus the stated tolerance);
 * - LEASE-2, I2: A's command stopped before B's claim.2.json (no two
 *   executions at once), and the job started exactly once;
 * - after SIGCONT, A publishes nothing more for generation 1 (CLAIM-7, OWN-1).
 *
 * The lease is the implementation's own (claim.1.json says it): with
 * LEASE_DEFAULT the case takes about a minute.
 */
import { execFileSync } from 'node:child_process';
import { readdir, readFile, readlink } from 'node:fs/promises';
import path from 'node:path';
import { writeFileSync } from 'node:fs';
import { GUARDIAN_LIMIT, LEASE_MIN, LEASE_SKEW, renewInterval } from '../../src/base/constants.ts';
import { selfIdentity } from '../../src/model/identity.ts';
import { publishRecord } from '../../src/fs/safefs.ts';
import { type ClaimRecord, encodeRecord, type ExecRecord, type StateRecord } from '../../src/records/codec.ts';
import { claimRecord, foreignOwner, stateRecord } from '../runner/fixtures.ts';
import { freshQueue, plantRecord, reopen, stageJob } from '../runner/stage.ts';
import { describeInjectedRun, needsInjector } from '../runner/pause.ts';
import { logged } from './jobs.ts';
import { type CaseContext, type ConformanceCase, countBy, readStarts } from '../runner/case.ts';
import { roleArgv } from '../runner/manifest.ts';
import { checkInvariants, listing } from '../runner/inspect.ts';
import { describeExit, roleEnv, sleep, start, type ProcessResult } from '../runner/process.ts';
import { sh } from './jobs.ts';
import { startRunning } from './running-job.ts';
import { bound, groupLives, killGroupNow, leaderLeavingMember, probe, procStat, readProbeLog, SCHEDULING_TOLERANCE_MS, waitFor } from './probes.ts';

/** Scheduling tolerance on a loaded 2-core machine, added to every bound the spec states. */
const TOLERANCE_MS = 3000;
const TICK_MS = 200;
/** The longest lease identity/lapse-after-exit waits out (LEASE_DEFAULT, with room). */
const LEASE_MAX_WAIT_MS = 60_000;

/**
 * The job both fencing cases watch: it logs one start, then a tick every
 * TICK_MS for as long as it runs, so a second execution or a command that
 * outlives its owner's fence shows in the files.
 */
async function stageVictim(ctx: CaseContext, name: string) {
  const root = await ctx.newQueue(name);
  const work = await ctx.subdir(`${name}/work`);
  const log = path.join(work, 'starts.log');
  const ticks = path.join(work, 'ticks');
  const job = await stageJob(await reopen(root), {
    argv: sh(`printf 'start %s\\n' victim >> "$1"; while :; do printf 'alive %s\\n' "$(date +%s%3N)" >> "$2"; sleep ${TICK_MS / 1000}; done`, log, ticks),
    cwd: work,
    max_attempts: 1,
    timeout_ms: 900_000,
  });
  return { root, log, ticks, job };
}

async function readJson<T>(file: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

/** The host pid of the process that is `nsPid` in the pid namespace `pidNs` (NSpid of /proc/<pid>/status). */
async function hostPidOf(nsPid: number, pidNs: string): Promise<number | undefined> {
  for (const name of await readdir('/proc')) {
    if (!/^[0-9]+$/.test(name)) continue;
    try {
      if ((await readlink(`/proc/${name}/ns/pid`)) !== pidNs) continue;
      const status = await readFile(`/proc/${name}/status`, 'utf8');
      const line = status.split('\n').find((l) => l.startsWith('NSpid:'));
      const ids = line?.split(/\s+/).slice(1).filter((s) => s !== '') ?? [];
      if (ids.length >= 2 && Number(ids.at(-1)) === nsPid) return Number(name);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

/** The "alive <ms>" lines the command wrote, as numbers. */
async function ticksOf(file: string): Promise<number[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((l) => l.startsWith('alive '))
    .map((l) => Number(l.slice('alive '.length)))
    .filter((n) => Number.isFinite(n));
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // gone
  }
}

async function pausedOwnerCase(ctx: CaseContext): Promise<void> {
  try {
    execFileSync('unshare', ['--pid', '--fork', '--mount-proc', '--kill-child', 'true'], { stdio: 'ignore' });
  } catch {
    ctx.skip('unshare --pid --fork --mount-proc is not available (needs root and util-linux): no second pid namespace to make a foreign owner');
  }
  const { root, log, ticks, job } = await stageVictim(ctx, 'paused');

  // Consumer A, in its own pid namespace: foreign to every judge outside it (ID-1).
  const argvA = ['unshare', '--pid', '--fork', '--mount-proc', '--kill-child', '--', ...roleArgv(ctx.impl, 'consume', { queue: root })];
  const a = start(argvA, { cwd: ctx.impl.dir, env: roleEnv(ctx.impl, { [ctx.marker.name]: ctx.marker.value }), timeoutMs: 600_000 });
  const runsB: ProcessResult[] = [];
  let aPid: number | undefined;
  try {
    // Wait for A's command to tick, then find A's consumer from its claim.
    const began = Date.now();
    while ((await ticksOf(ticks)).length < 3 && Date.now() - began < 60_000) await sleep(100);
    const claim = await readJson<ClaimRecord>(path.join(job.dir, 'claim.1.json'));
    if ((await ticksOf(ticks)).length < 3 || claim === undefined) {
      ctx.fail(['EXEC-3', 'MANIFEST-1'], 'consumer A (in its own pid namespace) never started the job, so the case could not pause it', [describeExit(await stopped(a)), ...listing(await ctx.snapshot(root))]);
      return;
    }
    aPid = await hostPidOf(claim.owner.pid, claim.owner.pid_ns);
    if (aPid === undefined) ctx.skip(`the owner of claim.1.json (pid ${claim.owner.pid} in ${claim.owner.pid_ns}) is not visible from here`);
    signal(aPid, 'SIGSTOP');
    await sleep(renewInterval(claim.lease_ms) + 500); // whatever renewal was under way has landed
    const state = await readJson<StateRecord>(path.join(job.dir, 'state.1.json'));
    const lastRenewal = Math.max(claim.claimed_ms, state?.heartbeat_ms ?? 0);
    const bound = lastRenewal + claim.lease_ms + GUARDIAN_LIMIT;

    // Consumer B, outside: runs until the job has a receipt (its watch decides, LEASE-3).
    const giveUp = Date.now() + 2 * (claim.lease_ms + GUARDIAN_LIMIT + LEASE_SKEW) + renewInterval(claim.lease_ms) + 30_000;
    let receipt = false;
    while (!receipt && Date.now() < giveUp) {
      runsB.push(await ctx.role('consume', { queue: root }, { timeoutMs: Math.max(ctx.impl.timeoutMs, 120_000) }));
      receipt = (await ctx.snapshot(root)).jobs.get(job.id)?.receipt !== undefined;
      if (!receipt) await sleep(1000);
    }
    const snapshot = await ctx.snapshot(root);
    const seen = snapshot.jobs.get(job.id);
    const ticked = await ticksOf(ticks);
    const lastTick = ticked.at(-1) ?? 0;
    const claim2 = await readJson<ClaimRecord>(path.join(job.dir, 'claim.2.json'));
    const starts = countBy(await readStarts(log)).get('victim') ?? 0;
    const evidence = (): string[] => [
      `claim.1.json: lease_ms ${claim.lease_ms}, last renewal ${lastRenewal} (claimed_ms ${claim.claimed_ms}, state heartbeat ${state?.heartbeat_ms ?? 'none'})`,
      `A's command: last tick ${lastTick} (${lastTick - lastRenewal} ms after the last renewal), ${ticked.length} ticks`,
      `claim.2.json: ${claim2 === undefined ? 'none' : `claimed_ms ${claim2.claimed_ms}`}`,
      ...runsB.slice(-2).map(describeExit),
      ...listing(snapshot, new Set([job.id])),
    ];
    ctx.check(
      lastTick <= bound + TOLERANCE_MS,
      ['LEASE-5', 'LEASE-2', 'WORKER-2'],
      `the command of an owner stopped by SIGSTOP must be stopped by its guardian within lease_ms + GUARDIAN_LIMIT of the last renewal (${bound}, + ${TOLERANCE_MS} ms tolerance); it still ticked at ${lastTick}`,
      evidence,
    );
    ctx.check(
      claim2 === undefined || lastTick < claim2.claimed_ms,
      ['LEASE-2', 'LEASE-3', 'I2'],
      `two executions at once: A's command ticked at ${lastTick}, after B claimed generation 2 at ${claim2?.claimed_ms ?? '?'}`,
      evidence,
    );
    ctx.check(starts === 1, ['RETRY-2', 'I2'], `a max_attempts 1 job must start exactly once; it started ${starts} times`, evidence);
    ctx.check(seen?.receipt !== undefined && claim2 !== undefined, ['LEASE-3', 'RECOV-1', 'I3'], 'B must break the paused foreign owner\'s claim once its watch has seen the lease lapse, and finish the job', evidence);

    // A resumes: superseded, it publishes nothing more for generation 1 (CLAIM-7, OWN-1).
    const records = async (): Promise<string> => {
      const names = (await readdir(job.dir)).filter((n) => !n.startsWith('.')).sort();
      const contents = await Promise.all(names.filter((n) => n.endsWith('.json')).map(async (n) => `${n} ${await readFile(path.join(job.dir, n), 'utf8').catch(() => '?')}`));
      return [names.join(' '), ...contents].join('\n');
    };
    const before = await records();
    signal(aPid, 'SIGCONT');
    await sleep(2000 + TOLERANCE_MS); // CONTROL_LATENCY + tolerance
    const after = await records();
    ctx.check(after === before, ['CLAIM-7', 'OWN-1'], 'after SIGCONT the superseded owner must publish nothing more for the job (no state, end or receipt of generation 1)', [before, '--- after SIGCONT ---', after]);
  } finally {
    if (aPid !== undefined) signal(aPid, 'SIGCONT');
    a.kill();
    await a.done;
  }
}

async function stopped(a: ReturnType<typeof start>): Promise<ProcessResult> {
  a.kill();
  return a.done;
}

/**
 * identity/foreign-renewing-skewed (LEASE-3, LEASE-4, issue 19 point 9): a
 * foreign owner that renews every 500 ms, but whose clock runs an hour
 * behind the judge's (so every renewal it writes looks an hour old). A judge
 * that trusts its wall clock breaks the live claim at once; a judge that
 * watches the renewal sees it change and leaves the claim alone.
 */
async function foreignRenewingSkewedCase(ctx: CaseContext): Promise<void> {
  const root = await ctx.newQueue('skewed');
  const work = await ctx.subdir('skewed/work');
  const log = path.join(work, 'starts.log');
  const queue = await reopen(root);
  const job = await stageJob(queue, { argv: sh(`printf 'start %s\n' victim >> "$1"`, log), cwd: work });
  const hour = 3_600_000;
  const owner = foreignOwner(await selfIdentity());
  await plantRecord(queue, job.dir, 'claim.1.json', 'claim', claimRecord(job.id, 1, owner, Date.now() - hour, LEASE_MIN));
  let stop = false;
  const renewer = (async () => {
    while (!stop) {
      const state = { ...stateRecord(job.id, 1), heartbeat_ms: Date.now() - hour };
      await publishRecord(job.dir, 'state.1.json', encodeRecord('state', state), 'rename', queue.fsOptions).catch(() => undefined);
      await sleep(500);
    }
  })();
  const runs: ProcessResult[] = [];
  try {
    if (ctx.impl.roles.recover !== undefined) runs.push(await ctx.role('recover', { queue: root }));
    runs.push(await ctx.role('consume', { queue: root }));
  } finally {
    stop = true;
    await renewer;
  }
  const snapshot = await ctx.snapshot(root);
  const seen = snapshot.jobs.get(job.id);
  const starts = countBy(await readStarts(log)).get('victim') ?? 0;
  const evidence = [...runs.map(describeExit), ...listing(snapshot, new Set([job.id]))];
  ctx.check(JSON.stringify(seen?.claims) === '[1]' && starts === 0, ['LEASE-3', 'LEASE-4', 'ID-7'], `a foreign owner that keeps renewing is alive, whatever the judge's wall clock says (its renewals read an hour old); claims ${seen?.claims.join(',')}, ${starts} starts`, evidence);
  for (const run of runs) ctx.check(!run.timedOut, ['MANIFEST-4'], 'recover and consume must finish once they have seen the foreign owner renew', [describeExit(run)]);
}

/** Whether pid runs (not a zombie). */
async function running(pid: number): Promise<boolean> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/**
 * consumer/guardian-grace (WORKER-2, WORKER-5, issue 13 point 5): the
 * consumer under test (a one-shot consume) is killed with SIGKILL while a
 * command that ignores SIGTERM runs with kill_grace_ms 300000. Its guardian
 * must stop the command within GUARDIAN_LIMIT of the death, so its grace is
 * GUARDIAN_GRACE at most, never the job's.
 */
async function guardianGraceCase(ctx: CaseContext): Promise<void> {
  const root = await ctx.newQueue('guardian');
  const work = await ctx.subdir('guardian/work');
  const pidFile = path.join(work, 'pid');
  await stageJob(await reopen(root), { argv: sh(`trap '' TERM; echo "$$" > "$1"; exec sleep 600`, pidFile), cwd: work, kill_grace_ms: 300_000, timeout_ms: 900_000 });
  const consumer = ctx.startRole('consume', { queue: root }, { timeoutMs: 600_000 });
  let pid: number | undefined;
  try {
    const began = Date.now();
    while (pid === undefined && Date.now() - began < 60_000) {
      const text = await readFile(pidFile, 'utf8').catch(() => '');
      if (/^[0-9]+\n$/.test(text)) pid = Number(text);
      else await sleep(100);
    }
    if (pid === undefined) {
      ctx.fail(['EXEC-3', 'MANIFEST-1'], 'the consumer never started the command, so the case could not kill it', [describeExit(await killed(consumer))]);
      return;
    }
    await sleep(1000); // the command is announced to the guardian before it is released
    signal(consumer.pid, 'SIGKILL');
    const died = Date.now();
    while ((await running(pid)) && Date.now() - died < GUARDIAN_LIMIT + TOLERANCE_MS) await sleep(100);
    const alive = await running(pid);
    ctx.check(!alive, ['WORKER-2', 'WORKER-5'], `the command (pid ${pid}, ignoring SIGTERM, kill_grace_ms 300000) of a consumer killed with SIGKILL must be stopped by its guardian within GUARDIAN_LIMIT (${GUARDIAN_LIMIT} ms, + ${TOLERANCE_MS} ms tolerance): the guardian's grace is at most GUARDIAN_GRACE, never the job's; it still ran after ${Date.now() - died} ms`);
  } finally {
    consumer.kill();
    await consumer.done;
    if (pid !== undefined && (await running(pid))) signal(pid, 'SIGKILL');
  }
}

/**
 * identity/lapsed-lease (LEASE-6): a consumer SIGSTOPped past its lease
 * (its guardian stops the command meanwhile, LEASE-5) and then continued must
 * not renew the lapsed lease: it ends the generation as a counted failure,
 * here a lost receipt (owner_lost: max_attempts 1), and writes no renewal
 * after the lapse.
 */
async function lapsedLeaseCase(ctx: CaseContext): Promise<void> {
  const { root, log, ticks, job } = await stageVictim(ctx, 'lapsed');
  const consumer = ctx.startRole('consume', { queue: root }, { timeoutMs: 600_000 });
  try {
    const began = Date.now();
    while ((await ticksOf(ticks)).length < 3 && Date.now() - began < 60_000) await sleep(100);
    const claim = await readJson<ClaimRecord>(path.join(job.dir, 'claim.1.json'));
    if ((await ticksOf(ticks)).length < 3 || claim === undefined) {
      ctx.fail(['EXEC-3', 'MANIFEST-1'], 'the consumer never started the job, so the case could not pause it', [describeExit(await killed(consumer))]);
      return;
    }
    signal(consumer.pid, 'SIGSTOP');
    const state = await readJson<StateRecord>(path.join(job.dir, 'state.1.json'));
    const lastRenewal = Math.max(claim.claimed_ms, state?.heartbeat_ms ?? 0);
    // Past the lease (+ the guardian's limit, so its deadman has acted) before the owner runs again.
    const resumeAt = lastRenewal + claim.lease_ms + GUARDIAN_LIMIT;
    while (Date.now() < resumeAt) await sleep(200);
    signal(consumer.pid, 'SIGCONT');
    const deadline = Date.now() + 60_000;
    let receipt = (await ctx.snapshot(root)).jobs.get(job.id)?.receipt;
    while (receipt === undefined && Date.now() < deadline) {
      await sleep(200);
      receipt = (await ctx.snapshot(root)).jobs.get(job.id)?.receipt;
    }
    const after = await readJson<StateRecord>(path.join(job.dir, 'state.1.json'));
    const snapshot = await ctx.snapshot(root);
    const evidence = [`claim.1.json: claimed_ms ${claim.claimed_ms}, lease_ms ${claim.lease_ms}; last renewal before SIGSTOP ${lastRenewal}; heartbeat after SIGCONT ${after?.heartbeat_ms ?? 'none'}`, ...listing(snapshot, new Set([job.id]))];
    ctx.check(
      (after?.heartbeat_ms ?? 0) <= lastRenewal + claim.lease_ms,
      ['LEASE-6', 'LEASE-2'],
      `an owner whose lease lapsed (not renewed for lease_ms while it was stopped) must not renew it; state.1.json says heartbeat_ms ${after?.heartbeat_ms ?? '?'}, past the lapse at ${lastRenewal + claim.lease_ms}`,
      evidence,
    );
    ctx.check(
      receipt?.outcome === 'lost' && receipt.reason === 'owner_lost' && receipt.gen === 1,
      ['LEASE-6', 'RCPT-4'],
      `the owner ends the lapsed generation as a counted failure: with no attempt left, a lost receipt (owner_lost) of generation 1; got ${JSON.stringify(receipt && { gen: receipt.gen, outcome: receipt.outcome, reason: receipt.reason, exit_code: receipt.exit_code })}`,
      evidence,
    );
  } finally {
    signal(consumer.pid, 'SIGCONT');
    consumer.kill();
    await consumer.done;
  }
}

/**
 * identity/lapse-after-exit (LEASE-6): LEASE-6 judges a lapse at the instant
 * the owner sees its execution end. Here the command exits 0 at once; the
 * consumer is stopped (crash injector) at its fsync of stdout.1, after the
 * command's end and before its receipt, for longer than its lease, then
 * resumed. The lease lapsed only after the end was seen, so the outcome is
 * the command's own: a succeeded receipt of generation 1, one start, no end
 * record. Ending it as a counted failure would throw away a success (here,
 * max_attempts 1, as lost: owner_lost).
 */
async function lapseAfterExitCase(ctx: CaseContext): Promise<void> {
  await needsInjector(ctx, 'to stop the consumer between its command\'s end and its receipt');
  const f = await freshQueue(ctx, 'after-exit');
  const job = await stageJob(f.queue, { argv: logged(f.log, 'quick'), cwd: f.work, max_attempts: 1 });
  const limit = ctx.impl.timeoutMs + LEASE_MAX_WAIT_MS;
  const run = await ctx.startRolePaused('consume', { queue: f.root }, { op: 'fsync', path: 'jobs/*/stdout.1' }, { timeoutMs: limit });
  const call = await run.paused;
  if (call === undefined) {
    const result = await run.result;
    ctx.fail(['RCPT-2', 'EXEC-1'], `consume ended without an fsync of stdout.1 (RCPT-2), so the case could not stop it between the command's end and its receipt: ${describeInjectedRun(result)}`, listing(await ctx.snapshot(f.root)));
    return;
  }
  try {
    const claim = await readJson<ClaimRecord>(path.join(job.dir, 'claim.1.json'));
    const exec = await readJson<ExecRecord>(path.join(job.dir, 'exec.1.json'));
    const starts = countBy(await readStarts(f.log)).get('quick') ?? 0;
    if (claim === undefined || exec?.group == null || starts !== 1 || groupLives(exec.group.pgid)) {
      ctx.skip(`the consumer fsyncs stdout.1 before its command has ended (claim ${claim === undefined ? 'missing' : 'there'}, ${starts} starts, group ${exec?.group == null ? 'unrecorded' : groupLives(exec.group.pgid) ? 'still running' : 'gone'}): the case cannot stop it between the end and the receipt`);
    }
    if (claim.lease_ms + TOLERANCE_MS > LEASE_MAX_WAIT_MS) ctx.skip(`the consumer's lease is ${claim.lease_ms} ms: longer than this case waits (${LEASE_MAX_WAIT_MS} ms)`);
    const state = await readJson<StateRecord>(path.join(job.dir, 'state.1.json'));
    const lastRenewal = Math.max(claim.claimed_ms, state?.heartbeat_ms ?? 0);
    // Past the lease, by a margin, before the owner runs again.
    while (Date.now() < lastRenewal + claim.lease_ms + TOLERANCE_MS) await sleep(200);
  } finally {
    run.resume();
  }
  const result = await run.result;
  const snapshot = await ctx.snapshot(f.root);
  const seen = snapshot.jobs.get(job.id);
  const receipt = seen?.receipt;
  const evidence = [describeInjectedRun(result), `stopped at k=${call.k} ${call.op} ${path.relative(f.root, call.path)}`, ...listing(snapshot, new Set([job.id]))];
  ctx.check(
    receipt?.outcome === 'succeeded' && receipt.gen === 1 && (seen?.claims.length ?? 0) === 1 && !(seen?.entries.some((e) => e.name === 'end.1.json') ?? false),
    ['LEASE-6', 'RCPT-3'],
    `the command had exited 0 and the owner had seen it end before its lease lapsed (it was stopped afterwards, before its receipt): LEASE-6 judges the lapse when the end is seen, so the outcome is the command's own, a succeeded receipt of generation 1; got ${receipt === undefined ? 'no receipt' : `${receipt.outcome} (${receipt.reason ?? '-'}) of generation ${receipt.gen}`}, claims ${seen?.claims.join(',') || 'none'}`,
    evidence,
  );
  ctx.check((countBy(await readStarts(f.log)).get('quick') ?? 0) === 1, ['LEASE-6', 'RETRY-2'], 'the job must have started exactly once', evidence);
}

async function killed(spawned: ReturnType<typeof start>): Promise<ProcessResult> {
  spawned.kill();
  return spawned.done;
}

async function guardianCase(ctx: CaseContext): Promise<void> {
  const queue = await ctx.newQueue('guardian');
  const work = await ctx.subdir('guardian/work');
  const log = path.join(work, 'probe.log');
  // The gate opens once the first run is stopped: a run the recovery should never start ends at once.
  const gate = path.join(work, 'gate');
  const run = await startRunning(ctx, queue, { argv: probe(log, 'orphan', { onTerm: 'ignore', gate }), cwd: work, timeout_ms: 300_000, kill_grace_ms: 1000 }, 'orphan', log);
  if (run === undefined) return;
  try {
    // A crash of the consumer: SIGKILL to its whole process group (the command runs in its own).
    run.consumer.kill();
    const killed = Date.now();
    const limit = GUARDIAN_LIMIT + SCHEDULING_TOLERANCE_MS;
    const stopped = await waitFor(() => !groupLives(run.pgid), limit, 50);
    const took = Date.now() - killed;
    await run.consumer.done;
    if (!stopped) {
      ctx.fail(['WORKER-2'], `the consumer was SIGKILLed while its command ran; the command (group ${run.pgid}, ignoring SIGTERM) still ran ${took} ms later: commands of a dead consumer are stopped within ${bound('GUARDIAN_LIMIT', GUARDIAN_LIMIT)}`, listing(await ctx.snapshot(queue), new Set([run.id])));
      killGroupNow(run.pgid);
      await waitFor(() => !groupLives(run.pgid), 5000);
    }
    writeFileSync(gate, '');
    // Recovery ends the dead attempt: max_attempts 1, so the job is lost (RECOV-1 step 3).
    const runs: ProcessResult[] = [];
    if (ctx.impl.roles.recover !== undefined) runs.push(await ctx.role('recover', { queue }));
    runs.push(await ctx.role('consume', { queue }));
    const snapshot = await ctx.snapshot(queue);
    const receipt = snapshot.jobs.get(run.id)?.receipt;
    const evidence = [...runs.map(describeExit), ...listing(snapshot, new Set([run.id]))];
    // Whether it ran again first: that is the cause a wrong receipt would follow from.
    const starts = countBy(await readStarts(log)).get('orphan') ?? 0;
    ctx.check(starts === 1, ['RETRY-2', 'I2'], `a job with max_attempts 1 whose attempt died with its owner must never start again; it started ${starts} times`, evidence);
    ctx.check(receipt?.outcome === 'lost' && receipt.exit_code === 125 && receipt.reason === 'owner_lost', ['RECOV-1', 'CLAIM-6', 'EXEC-10'], `the only attempt died with its owner: recovery publishes a lost receipt (125, owner_lost); got ${receipt === undefined ? 'no receipt' : `${receipt.outcome} (${receipt.exit_code}, ${receipt.reason})`}`, evidence);
    if (receipt?.outcome === 'lost') ctx.check(receipt.stdout?.gen === 1 && receipt.stdout.bytes_total === null && receipt.stderr?.bytes_total === null, ['RECOV-1', 'RCPT-5'], `a lost receipt describes the dead generation's files with bytes_total null; got stdout ${JSON.stringify(receipt.stdout)}`, evidence);
    for (const failure of await checkInvariants(snapshot, { accepted: [run.id] })) ctx.failures.push(failure);
  } finally {
    killGroupNow(groupLives(run.pgid) ? run.pgid : undefined);
  }
}

/**
 * consumer/guardian-after-leader (WORKER-2, EXEC-11): the leader exits 0 at
 * once and leaves a member in its group that ignores SIGTERM; the job's
 * kill_grace_ms is 300 s, so the owner's EXEC-11 sweep is in its grace when
 * the case SIGKILLs the consumer. The guardian still guards the group (until
 * the owner has proven the whole group stopped, not until the leader exits,
 * and from outside the group, which the leader's exit did not take with it):
 * the member is stopped within GUARDIAN_LIMIT.
 */
async function guardianAfterLeaderCase(ctx: CaseContext): Promise<void> {
  const root = await ctx.newQueue('leftover');
  const work = await ctx.subdir('leftover/work');
  const log = path.join(work, 'probe.log');
  await stageJob(await reopen(root), { argv: await leaderLeavingMember(work, log), cwd: work, kill_grace_ms: 300_000, timeout_ms: 900_000 });
  const consumer = ctx.startRole('consume', { queue: root }, { timeoutMs: 600_000 });
  let pgid: number | undefined;
  try {
    // The owner's EXEC-11 SIGTERM has reached the member: the leader is gone and the sweep is in its grace.
    const swept = await waitFor(async () => (await readProbeLog(log)).lines.some((l) => l.startsWith('term member ')), 60_000);
    const pid = Number((await readProbeLog(log)).lines.find((l) => l.startsWith('member '))?.slice(7));
    pgid = Number.isInteger(pid) && pid > 0 ? procStat(pid)?.pgrp : undefined;
    if (!swept || pgid === undefined) {
      ctx.fail(['EXEC-11', 'MANIFEST-1'], `the leader exited leaving a member in its group, but the member got no SIGTERM within 60 s (EXEC-11), so the case could not kill the owner during the sweep`, [describeExit(await killed(consumer)), ...listing(await ctx.snapshot(root))]);
      return;
    }
    consumer.kill();
    const died = Date.now();
    const stopped = await waitFor(() => !groupLives(pgid as number), GUARDIAN_LIMIT + SCHEDULING_TOLERANCE_MS, 50);
    ctx.check(
      stopped,
      ['WORKER-2', 'EXEC-11', 'LEASE-2'],
      `the owner was SIGKILLed while EXEC-11 swept what its command's leader left in the group (a member ignoring SIGTERM, kill_grace_ms 300 s): its guardian guards the group until the whole group is proven stopped, so the member is stopped within ${bound('GUARDIAN_LIMIT', GUARDIAN_LIMIT)}; it still ran ${Date.now() - died} ms later`,
      listing(await ctx.snapshot(root)),
    );
  } finally {
    consumer.kill();
    await consumer.done;
    killGroupNow(pgid);
  }
}

export const leasesCases: ConformanceCase[] = [
  {
    name: 'identity/paused-owner',
    clauses: ['LEASE-5', 'LEASE-2', 'LEASE-3', 'WORKER-2', 'I2', 'RETRY-2', 'CLAIM-7', 'OWN-1'],
    level: 'consumer',
    strength: 'MUST',
    root: true,
    heavy: true,
    run: pausedOwnerCase,
  },
  { name: 'identity/foreign-renewing-skewed', clauses: ['LEASE-3', 'LEASE-4', 'ID-7', 'MANIFEST-4'], level: 'consumer', strength: 'MUST', run: foreignRenewingSkewedCase },
  { name: 'consumer/guardian-grace', clauses: ['WORKER-2', 'WORKER-5'], level: 'consumer', strength: 'MUST', run: guardianGraceCase },
  { name: 'consumer/guardian-after-leader', clauses: ['WORKER-2', 'EXEC-11', 'LEASE-2'], level: 'consumer', strength: 'MUST', run: guardianAfterLeaderCase },
  { name: 'identity/lapsed-lease', clauses: ['LEASE-6', 'LEASE-2', 'RCPT-4'], level: 'consumer', strength: 'MUST', heavy: true, run: lapsedLeaseCase },
  { name: 'identity/lapse-after-exit', clauses: ['LEASE-6', 'RCPT-3', 'RETRY-2'], level: 'consumer', strength: 'MUST', heavy: true, idle: true, run: lapseAfterExitCase },
  { name: 'ownership/guardian', clauses: ['WORKER-2', 'RECOV-1', 'RETRY-2'], level: 'consumer', strength: 'MUST', heavy: true, run: guardianCase },
];
