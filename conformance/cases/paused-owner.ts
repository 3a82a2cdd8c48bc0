/**
 * A paused owner (LEASE-2, LEASE-5, LEASE-6, issue 13 point 13): an owner that
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
import { GUARDIAN_LIMIT, LEASE_SKEW, renewInterval } from '../../src/base/constants.ts';
import type { ClaimRecord, StateRecord } from '../../src/records/codec.ts';
import { type CaseContext, type ConformanceCase, countBy, readStarts } from '../runner/case.ts';
import { roleArgv } from '../runner/manifest.ts';
import { listing } from '../runner/inspect.ts';
import { describeExit, roleEnv, sleep, start, type ProcessResult } from '../runner/process.ts';
import { reopen, stageJob } from '../runner/stage.ts';
import { sh } from './jobs.ts';

/** Scheduling tolerance on a loaded 2-core machine, added to every bound the spec states. */
const TOLERANCE_MS = 3000;
const TICK_MS = 200;

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
  const root = await ctx.newQueue('paused');
  const work = await ctx.subdir('paused/work');
  const log = path.join(work, 'starts.log');
  const ticks = path.join(work, 'ticks');
  const job = await stageJob(await reopen(root), {
    argv: sh(`printf 'start %s\\n' victim >> "$1"; while :; do printf 'alive %s\\n' "$(date +%s%3N)" >> "$2"; sleep ${TICK_MS / 1000}; done`, log, ticks),
    cwd: work,
    max_attempts: 1,
    timeout_ms: 900_000,
  });

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

export const pausedOwnerCases: ConformanceCase[] = [
  {
    name: 'identity/paused-owner',
    clauses: ['LEASE-5', 'LEASE-2', 'LEASE-3', 'WORKER-2', 'I2', 'RETRY-2', 'CLAIM-7', 'OWN-1'],
    level: 'consumer',
    strength: 'MUST',
    root: true,
    heavy: true,
    run: pausedOwnerCase,
  },
];
