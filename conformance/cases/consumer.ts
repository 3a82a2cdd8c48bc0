/**
 * Consumer cases that need more than one batch: cancelling a running job,
 * and four consumers racing over 200 jobs (lanes: scheduling.ts).
 */
import { existsSync } from 'node:fs';
import { readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { CANCEL_GRACE, CONTROL_LATENCY } from '../../src/base/constants.ts';
import { type CaseContext, type ConformanceCase, countBy, readStarts } from '../runner/case.ts';
import { checkInvariants, listing } from '../runner/inspect.ts';
import type { Failure } from '../runner/report.ts';
import { describeExit, roleEnv } from '../runner/process.ts';
import { roleArgv } from '../runner/manifest.ts';
import { auditCalls } from '../runner/audit.ts';
import { runWithCrash, type CrashRunResult } from '../crash/run.ts';
import { interposerPath } from '../crash/interposer.ts';
import { reopen, stageJob } from '../runner/stage.ts';
import { logged } from './jobs.ts';
import { bound, groupLives, killGroupNow, probe, readProbeLog, SCHEDULING_TOLERANCE_MS, waitFor } from './probes.ts';
import { consumerExit, startRunning } from './running.ts';

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

const RACE_JOBS = 200;
const RACERS = 4;

async function concurrencyCase(ctx: CaseContext): Promise<void> {
  const root = await ctx.newQueue('race');
  const queue = await reopen(root);
  const work = await ctx.subdir('race/work');
  const log = path.join(work, 'starts.log');
  const ids: string[] = [];
  // Staged by the runner: the case is about consumers racing, and 200 produce runs would dominate it.
  for (let i = 0; i < RACE_JOBS; i++) {
    const staged = await stageJob(queue, { argv: logged(log, `job-${i}`), cwd: work });
    ids.push(staged.id);
  }
  const timeoutMs = Math.max(ctx.impl.timeoutMs, 300_000);
  // Each racer runs under the crash injector in count mode: nothing is killed,
  // but every mutating call is logged, so how claims were taken can be audited.
  // Without a C compiler the race still runs, unaudited.
  const audited = await interposerPath().then(
    () => true,
    () => false,
  );
  if (!audited) ctx.note('no C compiler for the crash injector: claims were not audited');
  const env = roleEnv(ctx.impl, { [ctx.marker.name]: ctx.marker.value });
  const argv = roleArgv(ctx.impl, 'consume', { queue: root });
  const race = (): Promise<{ exitCode: number | null; signal: string | null; timedOut: boolean; stderr: string; calls: CrashRunResult['calls'] }> =>
    audited ? runWithCrash({ argv, cwd: ctx.impl.dir, env, root, timeoutMs }) : ctx.role('consume', { queue: root }, { timeoutMs }).then((r) => ({ exitCode: r.code, signal: r.signal, timedOut: r.timedOut, stderr: r.stderr, calls: [] }));
  const runs = await Promise.all(Array.from({ length: RACERS }, race));
  const snapshot = await ctx.snapshot(root);
  const describe = (run: { exitCode: number | null; signal: string | null; timedOut: boolean; stderr: string }): string =>
    `consume: ${run.timedOut ? `killed after its time limit (${timeoutMs} ms)` : `exit ${run.exitCode}${run.signal === null ? '' : ` signal ${run.signal}`}`}; stderr: ${run.stderr.trim().split('\n').slice(-2).join(' | ').slice(0, 300)}`;
  for (const run of runs) ctx.check(run.exitCode === 0 && !run.timedOut, ['MANIFEST-1', 'MANIFEST-2'], 'every racing consume must exit 0', [describe(run)]);
  const real = await realpath(root);
  for (const [index, run] of runs.entries()) {
    for (const finding of auditCalls(run.calls, real, `racer ${index + 1}`)) ctx.failures.push(finding);
  }
  const counts = countBy(await readStarts(log));
  const twice: string[] = [];
  const never: string[] = [];
  for (let i = 0; i < RACE_JOBS; i++) {
    const n = counts.get(`job-${i}`) ?? 0;
    if (n > 1) twice.push(`job-${i} (${ids[i]}) x${n}`);
    if (n === 0) never.push(`job-${i} (${ids[i]})`);
  }
  ctx.check(twice.length === 0, ['CLAIM-5', 'I2', 'RETRY-2'], `${twice.length} of ${RACE_JOBS} max_attempts-1 jobs started more than once under ${RACERS} racing consumers: ${twice.slice(0, 5).join(', ')}`, () => twice.slice(0, 3).flatMap((t) => listing(snapshot, new Set([t.split('(')[1]?.split(')')[0] ?? '']))));
  ctx.check(never.length === 0, ['I3', 'CLAIM-1'], `${never.length} jobs never started: ${never.slice(0, 5).join(', ')}`);
  const unfinished = ids.filter((id) => snapshot.jobs.get(id)?.receipt?.outcome !== 'succeeded');
  ctx.check(unfinished.length === 0, ['I3', 'RCPT-3'], `${unfinished.length} jobs have no succeeded receipt: ${unfinished.slice(0, 5).join(', ')}`, () => listing(snapshot, new Set(unfinished.slice(0, 3))));
  for (const failure of await checkInvariants(snapshot, { accepted: ids, requireReceipts: true })) ctx.failures.push(failure);
  ctx.note(`${RACE_JOBS} jobs, ${RACERS} consumers, ${runs.reduce((n, r) => n + r.calls.length, 0)} calls audited`);
}

export const consumerCases: ConformanceCase[] = [
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
  { name: 'consumer/concurrency', clauses: ['CLAIM-5', 'I2', 'I3'], level: 'consumer', strength: 'MUST', heavy: true, run: concurrencyCase },
];
