/**
 * Power loss (`--crash power`, `--crash power-full`): what a machine that
 * loses power leaves, not just what a killed process leaves. A kill keeps
 * the page cache, so it never sees a missing fsync; here the disk keeps
 * only what the persistence model (crash/power-model.ts) says is durable.
 *
 * For each scenario of cases/crash-scenarios.ts:
 *
 *   1. run it once, clean, under the injector in trace mode: every mutating
 *      call in the queue with its effect, and outside it the scenario's
 *      observations (each role's exit status, each command's start);
 *   2. replay the trace on a model of the queue; for a sample of crash
 *      points c (a power loss right after call c), build the states the
 *      model allows that can break the most (crash/power-states.ts), each
 *      distinct state once;
 *   3. put each state on disk as real files and check it: what was promised
 *      before the power went is there (cases/power-checks.ts: ENQ-4,
 *      PUB-5, EXEC-3, PUB-2), and I1..I4 hold on what is left (torn
 *      records name PUB-2);
 *   4. for some of them (quick: the state of each family that loses the
 *      most; full: all), recover with the implementation itself (recover,
 *      produce again what was not accepted, consume) and check I1..I4 and
 *      the scenario's outcomes, counting the starts before the power loss.
 *
 * Deterministic: the same trace gives the same states, checked in the same
 * order; a failure names the state (crash point, family) it was found in.
 */
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { startWithCrash, type CrashRunResult } from '../crash/run.ts';
import type { TraceRecord } from '../crash/trace.ts';
import { buildModel, ModelError, readInitial, type Model } from '../crash/power-model.ts';
import { describeState, lastPendingPoint, materialize, planStates, publishes, type Family, type Plan, type PowerState } from '../crash/power-states.ts';
import { JOB_ID_PATTERN } from '../../src/records/names.ts';
import { type CaseContext, type ConformanceCase, countBy, readStarts } from '../runner/case.ts';
import { checkInvariants, listing } from '../runner/inspect.ts';
import { roleEnv } from '../runner/process.ts';
import type { CrashPoint, Failure } from '../runner/report.ts';
import { recoverAndDrain, SCENARIOS, scenarioChecks, TRACE_ENV, type Prepared, type Scenario, type ScenarioName } from './crash-scenarios.ts';
import { brokenPromises, observe, realStates, startsBy, type Observations } from './power-checks.ts';

/** The clauses each scenario's power-loss case checks: durability first. */
const POWER_CLAUSES: Record<ScenarioName, string[]> = {
  produce: ['ENQ-4', 'DUR-4', 'PUB-5', 'PUB-2', 'ENQ-3', 'ENQ-5', 'DEDUPE-3', 'GATE-1', 'READY-4', 'I1', 'I3', 'RECOV-3'],
  consume: ['PUB-5', 'EXEC-3', 'PUB-2', 'PUB-4', 'RCPT-2', 'READY-4', 'I1', 'I2', 'I3', 'I4', 'RECOV-1', 'RECOV-3'],
  cancel: ['PUB-5', 'PUB-2', 'CANCEL-1', 'CANCEL-2', 'I2', 'I3', 'RECOV-3'],
  gates: ['DUR-4', 'GATE-3', 'GATE-2', 'AFTER-3', 'PUB-5', 'I2', 'I3', 'RECOV-3'],
  release: ['PUB-5', 'HOLD-2', 'DUR-4', 'GATE-3', 'I3', 'RECOV-3'],
  slots: ['PUB-5', 'DUR-4', 'LANE-5', 'LANE-6', 'I2', 'I3', 'RECOV-3'],
};

/** Recovery runs per scenario in the quick sample: the state of each family that loses the most. */
const QUICK_RECOVERIES: Family[] = ['lost', 'names', 'alone'];

interface Traced {
  records: TraceRecord[];
  prepared: Prepared;
  model: Model;
  /** What the queue really held after call k. */
  realAt: ReturnType<typeof realStates>;
  observations: Observations;
  ids: Map<string, string>;
  result: CrashRunResult;
}

async function traceScenario(ctx: CaseContext, scenario: Scenario): Promise<Traced | Failure[]> {
  const dir = await ctx.subdir(`power-${scenario.name}`);
  const prepared = await scenario.prepare(ctx, dir);
  const root = await realpath(prepared.root);
  const initial = readInitial(root);
  const run = await startWithCrash({
    argv: prepared.scriptArgv,
    cwd: ctx.impl.dir,
    env: roleEnv(ctx.impl, { [ctx.marker.name]: ctx.marker.value }),
    root: dir,
    trace: true,
    envFile: path.join(dir, TRACE_ENV),
    timeoutMs: ctx.impl.timeoutMs * Math.max(1, prepared.requests.length),
  });
  const result = await run.result;
  rmSync(path.join(dir, TRACE_ENV), { force: true });
  const records = result.trace ?? [];
  const observations = observe(records, prepared.work);
  const ids = new Map<string, string>();
  for (const request of prepared.requests) {
    const out = (() => {
      try {
        return readFileSync(path.join(prepared.work, `out.${request.tag}`), 'utf8').trim();
      } catch {
        return '';
      }
    })();
    if (JOB_ID_PATTERN.test(out)) ids.set(request.tag, out);
  }
  const failures: Failure[] = [];
  const clean = result.exitCode === 0 && !result.timedOut && observations.exits.length === Math.max(1, prepared.requests.length) && observations.exits.every((exit) => exit.status === 0);
  if (!clean) failures.push({ clauses: ['MANIFEST-1'], message: `traced run: without a power loss the ${scenario.name} scenario must succeed`, evidence: [`exit ${result.exitCode} signal ${result.signal}${result.timedOut ? ' (timed out)' : ''}`, `exits seen: ${JSON.stringify(observations.exits)}`, result.stderr.slice(-400)] });
  if (!records.some((record) => record.path.startsWith(`${root}/`))) {
    failures.push({ clauses: ['MANIFEST-1'], message: 'traced run: the injector saw no mutating call inside the queue: the implementation bypasses LD_PRELOAD (a static binary or raw syscalls), so no power-loss state can be built', evidence: [] });
  }
  if (failures.length > 0) return failures;
  try {
    const model = buildModel(root, initial.snapshot, initial.inos, records);
    return { records, prepared, model, realAt: realStates(model), observations, ids, result };
  } catch (error) {
    if (!(error instanceof ModelError)) throw error;
    return [{ clauses: ['MANIFEST-1'], message: `traced run: the power-loss model cannot replay a call: ${error.message}`, evidence: [] }];
  }
}

/** Which states to build: quick picks the points where each family can break the most, full every point. */
function plan(traced: Traced, full: boolean): Plan {
  const { model, observations } = traced;
  if (full) {
    const all = Array.from({ length: model.last }, (_, i) => i + 1);
    return { lost: all, names: all, alone: all, omitted: all };
  }
  const unique = (list: number[]): number[] => [...new Set(list.filter((c) => c >= 1 && c <= model.last))].sort((a, b) => a - b);
  const published = model.changes.filter(publishes);
  return {
    // Where a promise was made (an exit, a start): the least is durable there.
    lost: unique([...observations.exits.map((e) => e.k), ...observations.starts.map((s) => s.k), model.last]),
    // Where a name was published: bytes not yet fsynced show under it.
    names: unique([...published.map((change) => change.record.k), model.last]),
    // Just before each publication became durable: the most is pending beside it.
    alone: unique(published.map((change) => lastPendingPoint(model, change))),
    omitted: [],
  };
}

/** The call the power was lost after, relative to the queue root. */
function crashPointOf(traced: Traced, c: number): CrashPoint {
  const record = traced.records.find((r) => r.k === c);
  const rel = (p: string): string => (p.startsWith(`${traced.model.root}/`) ? path.relative(traced.model.root, p) : p);
  if (record === undefined) return { k: c, op: 'call', path: '?' };
  return { k: c, op: record.op, path: rel(record.path), ...(record.path2 === undefined ? {} : { path2: rel(record.path2) }) };
}

interface Found {
  /** Sort key: inspections before recoveries, then by state. */
  order: number;
  failure: Failure;
}

async function inspect(ctx: CaseContext, scenario: Scenario, traced: Traced, state: PowerState, index: number): Promise<{ root: string; found: Found[] }> {
  const base = await ctx.subdir(`power-${scenario.name}-s${index}`);
  const root = path.join(base, 'q');
  materialize(state.state, root);
  mkdirSync(path.join(base, 'work'), { mode: 0o700 });
  const what = describeState(state, traced.model);
  const crash = crashPointOf(traced, state.c);
  const found: Found[] = [];
  const push = (failures: Failure[], evidence: string[]): void => {
    for (const failure of failures) found.push({ order: index, failure: { ...failure, message: `after the power loss (${what}): ${failure.message}`, evidence: [...failure.evidence, ...evidence], crash } });
  };
  const snapshot = await ctx.snapshot(root);
  const isProduce = (tag: string): boolean => traced.prepared.requests.some((r) => r.tag === tag);
  push(brokenPromises({ model: traced.model, realAt: traced.realAt, state: state.state, c: state.c, observations: traced.observations, ids: traced.ids, isProduce }), listing(snapshot));
  // Accepted jobs that vanished are brokenPromises' (ENQ-4, named first), not checkInvariants'.
  push(await checkInvariants(snapshot, { starts: startsBy(traced.observations, state.c), invalidClauses: ['PUB-2', 'I1'], powerLoss: true }), []);
  return { root, found };
}

/** The jobs accepted by call c: staged ones, and those whose producer had exited 0 with an id. */
function acceptedBy(traced: Traced, c: number): string[] {
  const accepted = [...traced.prepared.accepted];
  for (const exit of traced.observations.exits) {
    const id = traced.ids.get(exit.tag);
    if (exit.k <= c && exit.status === 0 && id !== undefined) accepted.push(id);
  }
  return accepted;
}

async function recover(ctx: CaseContext, scenario: Scenario, traced: Traced, state: PowerState, root: string, order: number): Promise<Found[]> {
  const accepted = acceptedBy(traced, state.c);
  const retry = traced.prepared.requests.filter((request) => !traced.observations.exits.some((exit) => exit.tag === request.tag && exit.k <= state.c && exit.status === 0 && traced.ids.has(request.tag)));
  // HOLD-2: a release that had exited 0 must have survived; one that had not is made again.
  const releaseAccepted = traced.observations.exits.some((exit) => exit.tag === 'release' && exit.status === 0 && exit.k <= state.c);
  const failures = await recoverAndDrain(ctx, root, accepted, retry, releaseAccepted ? undefined : traced.prepared.released);
  const final = await ctx.snapshot(root);
  const starts = startsBy(traced.observations, state.c);
  for (const [id, n] of countBy(await readStarts(path.join(path.dirname(root), 'work', 'starts.log')))) starts.set(id, (starts.get(id) ?? 0) + n);
  failures.push(...(await checkInvariants(final, { accepted, starts, requireReceipts: true, unfinished: new Set(traced.prepared.unfinished ?? []) })).map((f) => ({ ...f, message: `after recovery: ${f.message}` })));
  const cancelAccepted = traced.observations.exits.some((exit) => exit.tag === 'cancel' && exit.status === 0 && exit.k <= state.c);
  failures.push(...(await scenarioChecks(scenario.name, traced.prepared, final, starts, cancelAccepted)).map((f) => ({ ...f, message: `after recovery: ${f.message}` })));
  const what = describeState(state, traced.model);
  const crash = crashPointOf(traced, state.c);
  return failures.map((failure) => ({ order, failure: { ...failure, message: `${what}; ${failure.message}`, crash } }));
}

/** Which inspected states are also recovered. */
function toRecover(states: readonly PowerState[], full: boolean): Set<PowerState> {
  if (full) return new Set(states);
  const chosen = new Set<PowerState>();
  for (const family of QUICK_RECOVERIES) {
    const best = states.filter((s) => s.family === family).sort((a, b) => b.lost - a.lost || a.c - b.c)[0];
    if (best !== undefined) chosen.add(best);
  }
  return chosen;
}

/** One failure per kind (phase and clauses), the first found, with a count of the other states that showed it. */
function firstOfEach(found: Found[]): Failure[] {
  const groups = new Map<string, { failure: Failure; more: number }>();
  for (const { failure } of [...found].sort((a, b) => a.order - b.order)) {
    const phase = failure.message.includes('after recovery') ? 'recovery' : 'loss';
    const key = `${phase} ${failure.clauses.join(' ')}`;
    const group = groups.get(key);
    if (group === undefined) groups.set(key, { failure, more: 0 });
    else group.more += 1;
  }
  return [...groups.values()].map(({ failure, more }) => (more === 0 ? failure : { ...failure, message: `${failure.message} (and ${more} more like it)` }));
}

function powerCase(scenario: Scenario): ConformanceCase {
  return {
    name: `power/${scenario.name}`,
    clauses: POWER_CLAUSES[scenario.name],
    level: scenario.level,
    strength: 'MUST',
    roles: scenario.roles,
    ...(scenario.features === undefined ? {} : { features: scenario.features }),
    power: true,
    fansOut: true,
    run: async (ctx) => {
      const full = ctx.settings.power === 'full';
      const traced = await ctx.pool.run(() => traceScenario(ctx, scenario));
      if (Array.isArray(traced)) {
        ctx.failures.push(...traced);
        return;
      }
      const states = planStates(traced.model, plan(traced, full));
      const recovering = toRecover(states, full);
      const found: Found[] = [];
      const recoveries: Promise<Found[]>[] = [];
      let done = 0;
      for (const [index, state] of states.entries()) {
        const inspected = await inspect(ctx, scenario, traced, state, index);
        found.push(...inspected.found);
        if (recovering.has(state)) {
          recoveries.push(
            ctx.pool.run(async () => {
              const result = await recover(ctx, scenario, traced, state, inspected.root, states.length + index);
              done += 1;
              ctx.settings.progress?.(`power/${scenario.name}: ${done}/${recovering.size} states recovered (${states.length} checked)`);
              return result;
            }),
          );
        }
      }
      for (const list of await Promise.all(recoveries)) found.push(...list);
      ctx.failures.push(...firstOfEach(found));
      ctx.note(`${states.length} power-loss states of ${traced.model.last} calls checked, ${recovering.size} recovered`);
    },
  };
}

export const powerCases: ConformanceCase[] = SCENARIOS.map(powerCase);
