/**
 * Crash injection (I1..I4 under kill -9): for a deterministic scenario per
 * role, count the mutating filesystem calls inside the queue with the
 * LD_PRELOAD injector (conformance/crash), then for every k (--crash full)
 * or a spread of about twelve k including the first and the last (quick):
 *
 *   1. build a fresh queue and run the scenario, killing its whole process
 *      group instead of performing the k-th call;
 *   2. check the queue as the crash left it: every job directory complete,
 *      no torn record anywhere (PUB-2, PUB-3, I1), no job started twice;
 *   3. recover with the implementation itself: its recover role (if any),
 *      produce again every request that was not accepted, then consume;
 *   4. check I1 (every job complete, no accepted job missing), I2 (claims in
 *      sequence, max_attempts 1 started at most once), I3 (exactly one
 *      receipt per job), I4 (receipts match their output files) and the
 *      record layer on every record.
 *
 * Commands append "start <job id>" to a log outside the queue: the queue is
 * never written by commands, and the log counts executions exactly.
 */
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { callFamily, runWithCrash, type CountedCall, type CrashRunResult } from '../crash/run.ts';
import { type CaseContext, type ConformanceCase, countBy, readStarts } from '../runner/case.ts';
import { checkInvariants } from '../runner/inspect.ts';
import { roleArgv } from '../runner/manifest.ts';
import { roleEnv } from '../runner/process.ts';
import { createQueue, writeRequest } from '../runner/stage.ts';
import type { CrashPoint, Failure } from '../runner/report.ts';
import { auditCalls } from '../runner/audit.ts';
import { auditMoves } from '../runner/audit-moves.ts';
import { prepareHeartbeat, prepareRecover, producedIds, recoverAndDrain, SCENARIOS, scenarioChecks, type Prepared, type Scenario, type ScenarioName } from './crash-scenarios.ts';

/**
 * What a kill can prove about each scenario. Not durability: a killed
 * process leaves the page cache to the kernel, so a missing fsync (ENQ-4's,
 * PUB-5's, RCPT-2's second half) is invisible here; `--crash power`
 * (cases/power.ts) checks those.
 */
const KILL_CLAUSES: Record<ScenarioName, string[]> = {
  produce: ['I1', 'ENQ-3', 'ENQ-5', 'ENQ-6', 'PUB-3', 'DEDUPE-3', 'GATE-1', 'I3', 'RECOV-3'],
  consume: ['I1', 'I2', 'I3', 'I4', 'PUB-3', 'CLAIM-5', 'RETRY-2', 'RCPT-2', 'RECOV-1', 'RECOV-3'],
  cancel: ['CANCEL-1', 'CANCEL-2', 'I2', 'I3', 'PUB-3', 'RECOV-3'],
  gates: ['GATE-3', 'GATE-2', 'AFTER-3', 'AFTER-4', 'HOLD-1', 'I2', 'I3', 'PUB-3', 'RECOV-3'],
  release: ['HOLD-2', 'GATE-3', 'I3', 'PUB-3', 'RECOV-3'],
  slots: ['LANE-5', 'LANE-2', 'LANE-6', 'I2', 'I3', 'PUB-3', 'RECOV-3'],
};

/** `count` kill points spread evenly over 1..n, first and last included. */
export function spreadPoints(n: number, count: number): number[] {
  if (n <= count) return Array.from({ length: n }, (_, i) => i + 1);
  const points = new Set<number>();
  for (let i = 0; i < count; i++) points.add(1 + Math.round((i * (n - 1)) / (count - 1)));
  return [...points].sort((a, b) => a - b);
}

/**
 * The quick sample: nine points spread over the run, plus the call right
 * after each commit point that I1 and I4 hinge on (a link to receipt.json, a
 * rename into jobs/): a writer that publishes first and completes later
 * (outputs written after the receipt, a job moved before it is whole) is
 * exposed exactly there, and a spread alone would rarely land in that window.
 */
export function quickPoints(calls: readonly CountedCall[], root: string): number[] {
  const n = calls.length;
  const points = new Set(spreadPoints(n, 9));
  for (const call of calls) {
    const target = call.path2 ?? '';
    const family = callFamily(call.op);
    const receipt = family === 'link' && path.basename(target) === 'receipt.json';
    const published = family === 'rename' && path.dirname(target) === path.join(root, 'jobs');
    if ((receipt || published) && call.k < n) points.add(call.k + 1);
  }
  return [...points].sort((a, b) => a - b);
}

interface PointResult {
  k: number | undefined;
  calls: CountedCall[];
  root: string;
  crashed: boolean;
  failures: Failure[];
}

function pointOf(result: CrashRunResult, root: string): CrashPoint | undefined {
  const call = result.interrupted;
  if (call === undefined) return undefined;
  const rel = (p: string): string => (p.startsWith(`${root}/`) ? path.relative(root, p) : p);
  return { k: call.k, op: call.op, path: rel(call.path), ...(call.path2 === undefined ? {} : { path2: rel(call.path2) }) };
}

async function startsById(log: string): Promise<Map<string, number>> {
  return countBy(await readStarts(log));
}

/** Runs one point: the scenario killed at k (or only counted), the checks after the crash, recovery, the checks after recovery. */
async function runPoint(ctx: CaseContext, scenario: Scenario, k: number | undefined): Promise<PointResult> {
  const dir = await ctx.subdir(`${scenario.name}-${k === undefined ? 'count' : `k${k}`}`);
  const prepared = await scenario.prepare(ctx, dir);
  const failures: Failure[] = [];
  let result: CrashRunResult;
  try {
    result = await runWithCrash({
      argv: prepared.argv,
      cwd: ctx.impl.dir,
      env: roleEnv(ctx.impl, { [ctx.marker.name]: ctx.marker.value }),
      root: prepared.root,
      ...(k === undefined ? {} : { killAt: k }),
      timeoutMs: ctx.impl.timeoutMs,
    });
  } catch (error) {
    return { k, calls: [], root: prepared.root, crashed: false, failures: [{ clauses: ['RECOV-3'], message: `the crash run failed: ${(error as Error).message}`, evidence: [] }] };
  }
  const crash = pointOf(result, prepared.root);
  const add = (list: Failure[], phase: string): void => {
    for (const failure of list) failures.push({ ...failure, message: `${phase}: ${failure.message}`, ...(crash === undefined ? {} : { crash }) });
  };
  if (result.timedOut) add([{ clauses: ['MANIFEST-2'], message: `the scenario did not finish within ${ctx.impl.timeoutMs} ms`, evidence: [result.stderr.slice(-400)] }], 'scenario');

  // Produced ids are known from the wrapper's result files.
  const produced = await producedIds(prepared);
  const accepted = [...prepared.accepted, ...produced.accepted];
  if (k === undefined) {
    const clean = result.exitCode === 0 && produced.retry.length === 0;
    if (!clean) add([{ clauses: ['MANIFEST-1'], message: `without a crash the ${scenario.name} scenario must succeed`, evidence: [`exit ${result.exitCode} signal ${result.signal}`, result.stderr.slice(-400)] }], 'count run');
    if (result.calls.length === 0) {
      add([{ clauses: ['MANIFEST-1'], message: 'the injector counted no mutating filesystem call inside the queue: the implementation bypasses LD_PRELOAD (a static binary or raw syscalls), so crash injection cannot test it', evidence: [] }], 'count run');
    }
  }

  // 2. What the crash left.
  const left = await ctx.snapshot(prepared.root);
  add(await checkInvariants(left, { accepted, starts: await startsById(prepared.log), invalidClauses: ['PUB-3', 'PUB-2', 'I1'] }), k === undefined ? 'after a clean run' : 'after the crash');
  // The count run only counts (and must leave a valid queue): recovery is for the kill points.
  if (k === undefined) return { k, calls: result.calls, root: prepared.root, crashed: false, failures };

  // 3. Recovery by the implementation itself.
  const released = result.exitCode === 0 && !result.crashed ? undefined : prepared.released;
  for (const failure of await recoverAndDrain(ctx, prepared.root, accepted, produced.retry, released)) failures.push({ ...failure, ...(crash === undefined ? {} : { crash }) });

  // 4. The invariants after recovery.
  const final = await ctx.snapshot(prepared.root);
  const starts = await startsById(prepared.log);
  add(await checkInvariants(final, { accepted, starts, requireReceipts: true, unfinished: new Set(prepared.unfinished ?? []) }), 'after recovery');
  add(await scenarioChecks(scenario.name, prepared, final, starts, result.exitCode === 0 && !result.crashed), 'after recovery');
  return { k, calls: result.calls, root: prepared.root, crashed: result.crashed, failures };
}

function crashCase(scenario: Scenario): ConformanceCase {
  return {
    name: `crash/${scenario.name}`,
    clauses: KILL_CLAUSES[scenario.name],
    level: scenario.level,
    strength: 'MUST',
    roles: scenario.roles,
    ...(scenario.features === undefined ? {} : { features: scenario.features }),
    crash: true,
    fansOut: true,
    run: async (ctx) => {
      const counted = await ctx.pool.run(() => runPoint(ctx, scenario, undefined));
      for (const failure of counted.failures) ctx.failures.push(failure);
      if (counted.calls.length === 0 || ctx.failures.length > 0) return;
      const n = counted.calls.length;
      const ks = ctx.settings.crash === 'full' ? Array.from({ length: n }, (_, i) => i + 1) : quickPoints(counted.calls, await realpath(counted.root));
      let done = 0;
      let notReached = 0;
      const points = await Promise.all(
        ks.map((k) =>
          ctx.pool.run(async () => {
            const point = await runPoint(ctx, scenario, k);
            done += 1;
            ctx.settings.progress?.(`crash/${scenario.name}: ${done}/${ks.length} kill points (of ${n} calls)`);
            return point;
          }),
        ),
      );
      for (const point of points) {
        if (!point.crashed) notReached += 1;
        for (const failure of point.failures) ctx.failures.push(failure);
      }
      ctx.crashPoints += ks.length;
      ctx.note(`${ks.length} of ${n} kill points${notReached > 0 ? `; ${notReached} runs ended before their k (the call count varies)` : ''}`);
    },
  };
}

/**
 * One counted and traced run of each scenario (and of recover over an
 * orphan), audited call by call (runner/audit.ts) and move by move
 * (runner/audit-moves.ts, PUB-9): no kill points needed, so it runs without
 * --crash too.
 */
/** ENQ-1: an invalid request (timeout_ms 0) is refused before anything is written: no mutating call at all inside the queue. */
async function auditInvalidRequest(ctx: CaseContext): Promise<Failure[]> {
  const dir = await ctx.subdir('audit-invalid-request');
  const root = path.join(dir, 'q');
  await createQueue(root);
  const file = await writeRequest(dir, 'invalid', { argv: ['/bin/true'], cwd: dir, timeout_ms: 0 });
  const result = await runWithCrash({ argv: roleArgv(ctx.impl, 'produce', { queue: root, request: file }), cwd: ctx.impl.dir, env: roleEnv(ctx.impl, { [ctx.marker.name]: ctx.marker.value }), root, timeoutMs: ctx.impl.timeoutMs });
  const rel = (p: string): string => path.relative(root, p);
  if (result.exitCode === 0) return [{ clauses: ['ENQ-1', 'REQ-1'], message: 'produce accepted a request with timeout_ms 0 (the schema allows 1 to TIMEOUT_MAX)', evidence: [`exit 0, stdout ${JSON.stringify(result.stdout.trim())}`] }];
  if (result.calls.length === 0) return [];
  return [{ clauses: ['ENQ-1', 'ENQ-6'], message: `produce refused an invalid request (timeout_ms 0) only after ${result.calls.length} mutating calls inside the queue; a request is validated, and defaults filled, before anything is written`, evidence: result.calls.slice(0, 6).map((c) => `k=${c.k} ${c.op} ${rel(c.path)}${c.path2 === undefined ? '' : ` -> ${rel(c.path2)}`}`) }];
}

const auditCase: ConformanceCase = {
  name: 'audit/publication',
  clauses: ['PUB-1', 'PUB-2', 'PUB-3', 'PUB-4', 'PUB-5', 'PUB-7', 'PUB-9', 'PUB-10', 'PUB-11', 'ENQ-1', 'ENQ-2', 'ENQ-3', 'ENQ-4', 'ENQ-5', 'GC-1', 'LAYOUT-3', 'CLAIM-5', 'RCPT-2', 'RCPT-6', 'DUR-2', 'I1', 'I4'],
  level: 'consumer',
  strength: 'MUST',
  fansOut: true,
  run: async (ctx) => {
    const runs: { name: string; prepare: (ctx: CaseContext, dir: string) => Promise<Prepared> }[] = SCENARIOS.filter((s) => s.roles.every((r) => ctx.impl.roles[r] !== undefined)).map((s) => ({ name: s.name, prepare: s.prepare }));
    if (ctx.impl.roles.recover !== undefined) runs.push({ name: 'recover', prepare: prepareRecover });
    runs.push({ name: 'heartbeat', prepare: prepareHeartbeat });
    let total = 0;
    // Findings are collected per run and reported in run order, so the first failure does not depend on which run finished first.
    const perRun = await Promise.all(
      runs.map((run) =>
        ctx.pool.run(async () => {
          const dir = await ctx.subdir(`audit-${run.name}`);
          const prepared = await run.prepare(ctx, dir);
          // Traced, so that directory moves are told apart (PUB-9, runner/audit-moves.ts).
          const result = await runWithCrash({ argv: prepared.argv, cwd: ctx.impl.dir, env: roleEnv(ctx.impl, { [ctx.marker.name]: ctx.marker.value }), root: prepared.root, timeoutMs: ctx.impl.timeoutMs, trace: true });
          total += result.calls.length;
          const findings: Failure[] = [];
          if (result.calls.length === 0) findings.push({ clauses: ['MANIFEST-1'], message: `${run.name}: the injector saw no mutating call inside the queue; the implementation bypasses LD_PRELOAD and cannot be audited`, evidence: [] });
          const root = await realpath(prepared.root);
          const calls = auditCalls(result.calls, root, run.name, result.trace);
          // One finding per call: a move auditCalls already judged (a rename into jobs/) is not reported twice.
          const judged = new Set(calls.map((f) => f.k));
          const moves = auditMoves(result.trace ?? [], root, run.name).filter((f) => !judged.has(f.k));
          findings.push(...[...calls, ...moves].sort((a, b) => a.k - b.k));
          return findings;
        }),
      ),
    );
    for (const findings of perRun) ctx.failures.push(...findings);
    ctx.failures.push(...(await ctx.pool.run(() => auditInvalidRequest(ctx))));
    ctx.note(`${total} calls audited over ${runs.map((r) => r.name).join(', ')}, and an invalid request`);
  },
};

export const crashCases: ConformanceCase[] = [auditCase, ...SCENARIOS.map(crashCase)];
