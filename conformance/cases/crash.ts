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
import { readFile, realpath, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { callFamily, runWithCrash, type CountedCall, type CrashRunResult } from '../crash/run.ts';
import { JOB_ID_PATTERN } from '../../src/records/names.ts';
import type { Queue } from '../../src/model/queue.ts';
import type { JobRequest } from '../../src/records/codec.ts';
import { type CaseContext, type ConformanceCase, countBy, readStarts } from '../runner/case.ts';
import { checkInvariants, listing, type QueueSnapshot } from '../runner/inspect.ts';
import { roleArgv, type Role } from '../runner/manifest.ts';
import { describeExit, roleEnv } from '../runner/process.ts';
import type { CrashPoint, Failure } from '../runner/report.ts';
import { createQueue, plantBytes, plantRecord, stageJob, writeRequest } from '../runner/stage.ts';
import { claimRecord, deadOwner, execRecord } from '../runner/fixtures.ts';
import { auditCalls } from '../runner/audit.ts';
import { sh } from './jobs.ts';

const STDIN_A = 'input of A\n';
const DEDUPE_KEY = 'crash-dedupe';

/** The three jobs every scenario uses: one with stdin, one with a dedupe key, one whose output is truncated. */
function crashJobs(work: string, log: string): { tag: string; request: JobRequest }[] {
  const start = (body: string): JobRequest['argv'] => sh(`printf 'start %s\\n' "$FSJOB_JOB_ID" >> "$1"; ${body}`, log);
  return [
    { tag: 'A', request: { argv: start('exec cat'), cwd: work, stdin_text: STDIN_A } },
    { tag: 'B', request: { argv: start('echo B'), cwd: work, dedupe: DEDUPE_KEY } },
    { tag: 'C', request: { argv: start("head -c 3000 /dev/zero | tr '\\000' c"), cwd: work, max_output_bytes: 1000 } },
  ];
}

function shellQuote(arg: string): string {
  return /^[\w./:=@%+,-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

interface Prepared {
  root: string;
  log: string;
  work: string;
  /** What runs under the injector. */
  argv: string[];
  /** Jobs known to be accepted before the scenario runs (staged). */
  accepted: string[];
  /** Requests the scenario produces: tag, request file; results land in <work>/rc.<tag> and out.<tag>. */
  requests: { tag: string; file: string; dedupe?: string }[];
  cancelled?: string;
}

interface Scenario {
  name: 'produce' | 'consume' | 'cancel';
  level: 'producer' | 'consumer';
  clauses: string[];
  roles: Role[];
  prepare: (ctx: CaseContext, dir: string) => Promise<Prepared>;
}

async function prepareBase(ctx: CaseContext, dir: string): Promise<{ root: string; work: string; log: string; queue: Queue }> {
  const root = path.join(dir, 'q');
  const queue = await createQueue(root);
  const work = await ctx.subdir(path.relative(ctx.dir, path.join(dir, 'work')));
  return { root, work, log: path.join(work, 'starts.log'), queue };
}

const SCENARIOS: Scenario[] = [
  {
    name: 'produce',
    level: 'producer',
    clauses: ['I1', 'ENQ-3', 'ENQ-4', 'ENQ-5', 'PUB-3', 'DEDUPE-3', 'I3'],
    roles: [],
    prepare: async (ctx, dir) => {
      const { queue: _queue, ...base } = await prepareBase(ctx, dir);
      const requests: Prepared['requests'] = [];
      const lines = ['#!/bin/sh', '# produce three jobs in a row; each result is kept outside the queue'];
      for (const job of crashJobs(base.work, base.log)) {
        const file = await writeRequest(base.work, `request-${job.tag}`, job.request);
        requests.push({ tag: job.tag, file, ...(job.request.dedupe === undefined ? {} : { dedupe: job.request.dedupe ?? undefined }) });
        const argv = roleArgv(ctx.impl, 'produce', { queue: base.root, request: file });
        const out = (name: string): string => shellQuote(path.join(base.work, `${name}.${job.tag}`));
        lines.push(`${argv.map(shellQuote).join(' ')} > ${out('out')} 2> ${out('err')}; echo $? > ${out('rc')}`);
      }
      const script = path.join(base.work, 'scenario.sh');
      await writeFile(script, `${lines.join('\n')}\n`, { mode: 0o700 });
      return { ...base, argv: ['/bin/sh', script], accepted: [], requests };
    },
  },
  {
    name: 'consume',
    level: 'consumer',
    clauses: ['I1', 'I2', 'I3', 'I4', 'PUB-3', 'CLAIM-5', 'RETRY-2', 'RCPT-2', 'RECOV-1', 'RECOV-3'],
    roles: [],
    prepare: async (ctx, dir) => {
      const { queue, ...base } = await prepareBase(ctx, dir);
      const accepted: string[] = [];
      for (const job of crashJobs(base.work, base.log)) accepted.push((await stageJob(queue, job.request)).id);
      return { ...base, argv: roleArgv(ctx.impl, 'consume', { queue: base.root }), accepted, requests: [] };
    },
  },
  {
    name: 'cancel',
    level: 'producer',
    clauses: ['CANCEL-1', 'CANCEL-2', 'I2', 'I3', 'PUB-3', 'RECOV-3'],
    roles: ['cancel'],
    prepare: async (ctx, dir) => {
      const { queue, ...base } = await prepareBase(ctx, dir);
      const [a, b] = crashJobs(base.work, base.log);
      const target = (await stageJob(queue, (a as { request: JobRequest }).request)).id;
      const other = (await stageJob(queue, (b as { request: JobRequest }).request)).id;
      return { ...base, argv: roleArgv(ctx.impl, 'cancel', { queue: base.root, id: target }), accepted: [target, other], requests: [], cancelled: target };
    },
  },
];

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
  const prepared = await prepareScenario(ctx, scenario, dir);
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
  const accepted = [...prepared.accepted];
  const retry: Prepared['requests'] = [];
  for (const request of prepared.requests) {
    const rc = (await readFile(path.join(prepared.work, `rc.${request.tag}`), 'utf8').catch(() => '')).trim();
    const out = (await readFile(path.join(prepared.work, `out.${request.tag}`), 'utf8').catch(() => '')).trim();
    if (rc === '0' && JOB_ID_PATTERN.test(out)) accepted.push(out);
    else retry.push(request);
  }
  if (k === undefined) {
    const clean = result.exitCode === 0 && retry.length === 0;
    if (!clean) add([{ clauses: ['MANIFEST-1'], message: `without a crash the ${scenario.name} scenario must succeed`, evidence: [`exit ${result.exitCode} signal ${result.signal}`, result.stderr.slice(-400)] }], 'count run');
    if (result.calls.length === 0) {
      add([{ clauses: ['MANIFEST-1'], message: 'the injector counted no mutating filesystem call inside the queue: the implementation bypasses LD_PRELOAD (a static binary or raw syscalls), so crash injection cannot test it', evidence: [] }], 'count run');
    }
  }

  // 2. What the crash left.
  const left = await ctx.snapshot(prepared.root);
  const startsAfterCrash = await startsById(prepared.log);
  add(await checkInvariants(left, { accepted, starts: startsAfterCrash, invalidClauses: ['PUB-3', 'PUB-2', 'I1'] }), k === undefined ? 'after a clean run' : 'after the crash');
  // The count run only counts (and must leave a valid queue): recovery is for the kill points.
  if (k === undefined) return { k, calls: result.calls, root: prepared.root, crashed: false, failures };

  // 3. Recovery by the implementation itself.
  const evidence: string[] = [];
  if (ctx.impl.roles.recover !== undefined) {
    const recovered = await ctx.role('recover', { queue: prepared.root });
    evidence.push(describeExit(recovered));
    if (recovered.code !== 0 || recovered.timedOut) add([{ clauses: ['RECOV-3', 'RECOV-1'], message: 'recover failed on the queue the crash left', evidence: [describeExit(recovered), ...listing(await ctx.snapshot(prepared.root))] }], 'recovery');
  }
  for (const request of retry) {
    const produced = await ctx.role('produce', { queue: prepared.root, request: request.file });
    evidence.push(describeExit(produced));
    const id = produced.stdout.trim();
    if (produced.code === 0 && JOB_ID_PATTERN.test(id)) {
      accepted.push(id);
      continue;
    }
    if (produced.code === 3 && request.dedupe !== undefined) {
      const snapshot = await ctx.snapshot(prepared.root);
      const holder = [...snapshot.jobs.values()].find((job) => job.spec?.dedupe === request.dedupe);
      if (holder !== undefined) continue; // the crashed produce published it after all: the key is rightly held
      add([{ clauses: ['DEDUPE-3', 'RECOV-3'], message: `producing request ${request.tag} again was refused for a held dedupe key, but no published job holds it (a dead producer's hold must stop counting)`, evidence: [describeExit(produced), ...listing(snapshot)] }], 'recovery');
      continue;
    }
    add([{ clauses: ['RECOV-3', 'ENQ-6'], message: `producing request ${request.tag} again failed on the queue the crash left`, evidence: [describeExit(produced), ...listing(await ctx.snapshot(prepared.root))] }], 'recovery');
  }
  const consumed = await ctx.role('consume', { queue: prepared.root });
  evidence.push(describeExit(consumed));
  if (consumed.code !== 0 || consumed.timedOut) add([{ clauses: ['RECOV-3'], message: 'consume failed on the queue the crash left', evidence: [describeExit(consumed), ...listing(await ctx.snapshot(prepared.root))] }], 'recovery');

  // 4. The invariants after recovery.
  const final = await ctx.snapshot(prepared.root);
  const starts = await startsById(prepared.log);
  add(await checkInvariants(final, { accepted, starts, requireReceipts: true }), 'after recovery');
  add(await scenarioChecks(scenario, prepared, final, starts, result), 'after recovery');
  return { k, calls: result.calls, root: prepared.root, crashed: result.crashed, failures };
}

async function prepareScenario(ctx: CaseContext, scenario: Scenario, dir: string): Promise<Prepared> {
  return scenario.prepare(ctx, dir);
}

/** What each scenario's jobs must show once recovered. */
async function scenarioChecks(scenario: Scenario, prepared: Prepared, snapshot: QueueSnapshot, starts: Map<string, number>, result: CrashRunResult): Promise<Failure[]> {
  const failures: Failure[] = [];
  for (const job of snapshot.jobs.values()) {
    const receipt = job.receipt;
    if (receipt === undefined) continue;
    const n = starts.get(job.id) ?? 0;
    const evidence = (): string[] => [`receipt: ${JSON.stringify(receipt).slice(0, 400)}`, `starts: ${n}`, ...listing(snapshot, new Set([job.id]))];
    if (job.id === prepared.cancelled) {
      const accepted = result.exitCode === 0 && !result.crashed;
      const ok = receipt.outcome === 'cancelled' ? n === 0 : !accepted && receipt.outcome === 'succeeded';
      if (!ok) failures.push({ clauses: ['CANCEL-1', 'CANCEL-2', 'CLAIM-6'], message: `job ${job.id} was ${accepted ? 'cancelled (the cancel role exited 0)' : 'possibly cancelled'} and must end cancelled without running${accepted ? '' : ', or run and succeed'}; it ended ${receipt.outcome} after ${n} starts`, evidence: evidence() });
      continue;
    }
    if (receipt.outcome === 'succeeded') {
      if (n !== 1) failures.push({ clauses: ['I2', 'RETRY-2'], message: `job ${job.id} succeeded but its command started ${n} times`, evidence: evidence() });
      if (job.spec?.stdin !== null && job.spec !== undefined) {
        const summary = receipt.stdout;
        const out = summary === null ? undefined : await readFile(path.join(job.dir, `stdout.${summary.gen}`)).catch(() => undefined);
        if (out?.toString('utf8') !== STDIN_A) failures.push({ clauses: ['I1', 'EXEC-7', 'ENQ-5'], message: `job ${job.id} read ${JSON.stringify(out?.toString('latin1'))} from its stdin, the request said ${JSON.stringify(STDIN_A)}`, evidence: evidence() });
      }
    } else if (receipt.outcome === 'lost') {
      if (scenario.name === 'produce') failures.push({ clauses: ['I3', 'RECOV-3'], message: `job ${job.id} was lost although no consumer crashed`, evidence: evidence() });
    } else {
      failures.push({ clauses: ['I3', 'RECOV-3'], message: `job ${job.id} ended ${receipt.outcome} (${receipt.exit_code}); its command succeeds, so only succeeded or lost (an attempt died with its owner) can be right`, evidence: evidence() });
    }
  }
  return failures;
}

function crashCase(scenario: Scenario): ConformanceCase {
  return {
    name: `crash/${scenario.name}`,
    clauses: scenario.clauses,
    level: scenario.level,
    strength: 'MUST',
    roles: scenario.roles,
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

/** A queue with one job whose owner died after recording an execution: recover must break the claim and publish a lost receipt. */
async function prepareRecover(ctx: CaseContext, dir: string): Promise<Prepared> {
  const { queue, ...base } = await prepareBase(ctx, dir);
  const [a] = crashJobs(base.work, base.log);
  const staged = await stageJob(queue, (a as { request: JobRequest }).request);
  const owner = await deadOwner();
  await plantRecord(queue, staged.dir, 'claim.1.json', 'claim', claimRecord(staged.id, 1, owner));
  await plantRecord(queue, staged.dir, 'exec.1.json', 'exec', execRecord(staged.id, 1, owner));
  for (const stream of ['stdout.1', 'stderr.1']) await plantBytes(path.join(staged.dir, stream), '');
  return { ...base, argv: roleArgv(ctx.impl, 'recover', { queue: base.root }), accepted: [staged.id], requests: [] };
}

/**
 * One counted run of each scenario (and of recover over an orphan), audited
 * call by call (runner/audit.ts): no kill points needed, so it runs without
 * --crash too.
 */
const auditCase: ConformanceCase = {
  name: 'audit/publication',
  clauses: ['PUB-1', 'PUB-2', 'PUB-3', 'PUB-4', 'ENQ-3', 'ENQ-5', 'CLAIM-5', 'RCPT-2', 'RCPT-6', 'I1', 'I4'],
  level: 'consumer',
  strength: 'MUST',
  fansOut: true,
  run: async (ctx) => {
    const runs: { name: string; prepare: (ctx: CaseContext, dir: string) => Promise<Prepared> }[] = SCENARIOS.filter((s) => s.roles.every((r) => ctx.impl.roles[r] !== undefined)).map((s) => ({ name: s.name, prepare: s.prepare }));
    if (ctx.impl.roles.recover !== undefined) runs.push({ name: 'recover', prepare: prepareRecover });
    let total = 0;
    // Findings are collected per run and reported in run order, so the first failure does not depend on which run finished first.
    const perRun = await Promise.all(
      runs.map((run) =>
        ctx.pool.run(async () => {
          const dir = await ctx.subdir(`audit-${run.name}`);
          const prepared = await run.prepare(ctx, dir);
          const result = await runWithCrash({ argv: prepared.argv, cwd: ctx.impl.dir, env: roleEnv(ctx.impl, { [ctx.marker.name]: ctx.marker.value }), root: prepared.root, timeoutMs: ctx.impl.timeoutMs });
          total += result.calls.length;
          const findings: Failure[] = [];
          if (result.calls.length === 0) findings.push({ clauses: ['MANIFEST-1'], message: `${run.name}: the injector saw no mutating call inside the queue; the implementation bypasses LD_PRELOAD and cannot be audited`, evidence: [] });
          findings.push(...auditCalls(result.calls, await realpath(prepared.root), run.name));
          return findings;
        }),
      ),
    );
    for (const findings of perRun) ctx.failures.push(...findings);
    ctx.note(`${total} calls audited over ${runs.map((r) => r.name).join(', ')}`);
  },
};

export const crashCases: ConformanceCase[] = [auditCase, ...SCENARIOS.map(crashCase)];
