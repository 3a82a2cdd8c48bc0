/**
 * The scenarios both crash modes run (cases/crash.ts kills a process at a
 * call; cases/power.ts builds the states a power loss leaves), and what both
 * do afterwards: recover with the implementation itself, drain the queue,
 * and check what each scenario's jobs must show.
 *
 * Layout of a scenario directory: `q/` (the queue), `work/` (requests, the
 * wrapper script, each role's exit status, the start log). Commands append
 * "start <job id>" to `$FSJOB_QUEUE/../work/starts.log`: outside the queue,
 * and relative to the queue they run in, so a copy of the queue made
 * elsewhere (a power-loss state) logs beside itself. When
 * `work/trace.env` exists (the power mode's traced run), that line is
 * written under the injector again, whose variables EXEC-6 keeps from the
 * command: the trace then shows when each command started.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { JOB_ID_PATTERN } from '../../src/records/names.ts';
import type { Queue } from '../../src/model/queue.ts';
import type { JobRequest } from '../../src/records/codec.ts';
import type { CaseContext } from '../runner/case.ts';
import { listing, type QueueSnapshot } from '../runner/inspect.ts';
import { roleArgv, type Role } from '../runner/manifest.ts';
import { describeExit } from '../runner/process.ts';
import type { Failure } from '../runner/report.ts';
import { createQueue, plantBytes, plantRecord, stageJob, writeRequest } from '../runner/stage.ts';
import { claimRecord, deadOwner, execRecord, foreignOwner } from '../runner/fixtures.ts';
import type { Feature } from '../runner/manifest.ts';
import { LEASE_MAX, PROTOCOL_VERSION } from '../../src/base/constants.ts';
import { ensurePrivateDir, fsyncDir } from '../../src/fs/safefs.ts';
import { selfIdentity } from '../../src/model/identity.ts';
import { slotHash } from '../../src/model/layout.ts';
import { sh } from './jobs.ts';

export const STDIN_A = 'input of A\n';
const DEDUPE_KEY = 'crash-dedupe';

/** Where a scenario's commands log their starts, relative to the queue root. */
export const STARTS_LOG = 'work/starts.log';
/** The injector's variables for a command to re-enter it (power mode). */
export const TRACE_ENV = 'work/trace.env';

const START = [
  'log=$FSJOB_QUEUE/../work/starts.log',
  'hook=$FSJOB_QUEUE/../work/trace.env',
  `if [ -r "$hook" ]; then env $(cat "$hook") sh -c 'printf "start %s\\n" "$FSJOB_JOB_ID" >> "$1"' fsjob-start "$log"`,
  `else printf 'start %s\\n' "$FSJOB_JOB_ID" >> "$log"; fi`,
].join('; ');

/** The three jobs every scenario uses: one with stdin, one with a dedupe key, one whose output is truncated. */
export function crashJobs(work: string): { tag: string; request: JobRequest }[] {
  const start = (body: string): JobRequest['argv'] => sh(`${START}; ${body}`);
  return [
    { tag: 'A', request: { argv: start('exec cat'), cwd: work, stdin_text: STDIN_A } },
    { tag: 'B', request: { argv: start('echo B'), cwd: work, dedupe: DEDUPE_KEY } },
    { tag: 'C', request: { argv: start("head -c 3000 /dev/zero | tr '\\000' c"), cwd: work, max_output_bytes: 1000 } },
  ];
}

function shellQuote(arg: string): string {
  return /^[\w./:=@%+,-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

export interface Request {
  tag: string;
  file: string;
  dedupe?: string;
}

export interface Prepared {
  /** The queue. */
  root: string;
  work: string;
  log: string;
  /** What a kill run runs under the injector: the role itself, or the produce script. */
  argv: string[];
  /** The same roles through a script that records each one's exit status in work/rc.<tag> (power mode). */
  scriptArgv: string[];
  /** Jobs known to be accepted before the scenario runs (staged). */
  accepted: string[];
  /** Requests the scenario produces; results land in work/rc.<tag> and work/out.<tag>. */
  requests: Request[];
  /** The role run by a consume, cancel or release scenario (its status lands in work/rc.<role>). */
  role?: 'consume' | 'cancel' | 'release';
  cancelled?: string;
  /** The held job a release scenario releases: released again by recovery unless the release had exited 0 (HOLD-2). */
  released?: string;
  /** Jobs that stay unfinished by design (a live foreign owner's claim): no receipt is owed for them. */
  unfinished?: string[];
}

export type ScenarioName = 'produce' | 'consume' | 'cancel' | 'gates' | 'release' | 'slots';

export interface Scenario {
  name: ScenarioName;
  level: 'producer' | 'consumer';
  roles: Role[];
  /** Optional features the scenario needs (MANIFEST-3). */
  features?: Feature[];
  prepare: (ctx: CaseContext, dir: string) => Promise<Prepared>;
}

async function prepareBase(ctx: CaseContext, dir: string): Promise<{ root: string; work: string; log: string; queue: Queue }> {
  const root = path.join(dir, 'q');
  const queue = await createQueue(root);
  const work = await ctx.subdir(path.relative(ctx.dir, path.join(dir, 'work')));
  return { root, work, log: path.join(work, 'starts.log'), queue };
}

async function script(work: string, name: string, lines: string[]): Promise<string[]> {
  const file = path.join(work, name);
  await writeFile(file, `${['#!/bin/sh', ...lines].join('\n')}\n`, { mode: 0o700 });
  return ['/bin/sh', file];
}

/** One role, run directly (kill mode) or through a script recording its status (power mode). */
async function single(work: string, role: 'consume' | 'cancel' | 'release', argv: string[]): Promise<{ argv: string[]; scriptArgv: string[] }> {
  const rc = shellQuote(path.join(work, `rc.${role}`));
  const scriptArgv = await script(work, `${role}.sh`, [`${argv.map(shellQuote).join(' ')}; rc=$?; echo $rc > ${rc}; exit $rc`]);
  return { argv, scriptArgv };
}

export const SCENARIOS: Scenario[] = [
  {
    name: 'produce',
    level: 'producer',
    roles: [],
    prepare: async (ctx, dir) => {
      const { queue, ...base } = await prepareBase(ctx, dir);
      const requests: Request[] = [];
      const jobs = crashJobs(base.work);
      const accepted: string[] = [];
      if (ctx.impl.profile.byLevel.producer.has('gates')) {
        // GATE-1 under kills: a fourth job runs after one that is still queued, so it is published at jobs/<id>.gated.
        const dependency = await stageJob(queue, { argv: sh(`${START}; echo D`), cwd: base.work });
        accepted.push(dependency.id);
        jobs.push({ tag: 'G', request: { argv: sh(`${START}; echo G`), cwd: base.work, after: [{ job_id: dependency.id }] } });
      }
      const lines = [`# produce ${jobs.length} jobs in a row; each result is kept outside the queue`];
      for (const job of jobs) {
        const file = await writeRequest(base.work, `request-${job.tag}`, job.request);
        requests.push({ tag: job.tag, file, ...(job.request.dedupe === undefined ? {} : { dedupe: job.request.dedupe ?? undefined }) });
        const argv = roleArgv(ctx.impl, 'produce', { queue: base.root, request: file });
        const out = (name: string): string => shellQuote(path.join(base.work, `${name}.${job.tag}`));
        lines.push(`${argv.map(shellQuote).join(' ')} > ${out('out')} 2> ${out('err')}; echo $? > ${out('rc')}`);
      }
      const argv = await script(base.work, 'scenario.sh', lines);
      return { ...base, argv, scriptArgv: argv, accepted, requests };
    },
  },
  {
    name: 'consume',
    level: 'consumer',
    roles: [],
    prepare: async (ctx, dir) => {
      const { queue, ...base } = await prepareBase(ctx, dir);
      const accepted: string[] = [];
      for (const job of crashJobs(base.work)) accepted.push((await stageJob(queue, job.request)).id);
      return { ...base, ...(await single(base.work, 'consume', roleArgv(ctx.impl, 'consume', { queue: base.root }))), accepted, requests: [], role: 'consume' };
    },
  },
  {
    name: 'cancel',
    level: 'producer',
    roles: ['cancel'],
    prepare: async (ctx, dir) => {
      const { queue, ...base } = await prepareBase(ctx, dir);
      const [a, b] = crashJobs(base.work);
      const target = (await stageJob(queue, (a as { request: JobRequest }).request)).id;
      const other = (await stageJob(queue, (b as { request: JobRequest }).request)).id;
      const runs = await single(base.work, 'cancel', roleArgv(ctx.impl, 'cancel', { queue: base.root, id: target }));
      return { ...base, ...runs, accepted: [target, other], requests: [], role: 'cancel', cancelled: target };
    },
  },
  {
    // Opening gates under kills (GATE-3, AFTER-3, AFTER-4): B runs after A succeeded, C (held, released) after A finished.
    name: 'gates',
    level: 'consumer',
    roles: [],
    features: ['gates'],
    prepare: async (ctx, dir) => {
      const { queue, ...base } = await prepareBase(ctx, dir);
      const start = (body: string): JobRequest['argv'] => sh(`${START}; ${body}`);
      const a = await stageJob(queue, { argv: start('echo A'), cwd: base.work });
      const b = await stageJob(queue, { argv: start('echo B'), cwd: base.work, after: [{ job_id: a.id, when: 'succeeded' }] });
      const c = await stageJob(queue, { argv: start('echo C'), cwd: base.work, hold: true, after: [{ job_id: a.id, when: 'finished' }] }, { released: true });
      return { ...base, ...(await single(base.work, 'consume', roleArgv(ctx.impl, 'consume', { queue: base.root }))), accepted: [a.id, b.id, c.id], requests: [], role: 'consume' };
    },
  },
  {
    // Releasing under kills (HOLD-2, GATE-3): release.json, then the gate's rename; a release that exited 0 is durable.
    name: 'release',
    level: 'producer',
    roles: ['release'],
    features: ['gates'],
    prepare: async (ctx, dir) => {
      const { queue, ...base } = await prepareBase(ctx, dir);
      const held = await stageJob(queue, { argv: sh(`${START}; echo H`), cwd: base.work, hold: true });
      const runs = await single(base.work, 'release', roleArgv(ctx.impl, 'release', { queue: base.root, id: held.id }));
      return { ...base, ...runs, accepted: [held.id], requests: [], role: 'release', released: held.id };
    },
  },
  {
    // Taking lane slot 2 under kills (LANE-5, LANE-6): slot 1 is held by a live foreign owner for the whole run.
    name: 'slots',
    level: 'consumer',
    roles: [],
    features: ['lanes', 'slots'],
    prepare: async (ctx, dir) => {
      const { queue, ...base } = await prepareBase(ctx, dir);
      const lane = 'crash-slots';
      const start = (body: string): JobRequest['argv'] => sh(`${START}; ${body}`);
      const foreign = foreignOwner(await selfIdentity());
      const holder = await stageJob(queue, { argv: start('echo F'), cwd: base.work, lane, lane_slots: 2 }, { ready: false });
      await plantRecord(queue, holder.dir, 'claim.1.json', 'claim', claimRecord(holder.id, 1, foreign, Date.now(), LEASE_MAX));
      const slot1 = path.join(base.root, 'lanes', slotHash(lane, 1));
      await ensurePrivateDir(slot1, queue.fsOptions);
      await fsyncDir(path.dirname(slot1), queue.fsOptions);
      await plantRecord(queue, slot1, '1.json', 'hold', { fsjob: PROTOCOL_VERSION, type: 'hold', kind: 'lane', key: lane, job_id: holder.id, gen: 1, owner: foreign, created_ms: Date.now() });
      const accepted = [];
      for (const tag of ['S', 'T']) accepted.push((await stageJob(queue, { argv: start(`echo ${tag}`), cwd: base.work, lane, lane_slots: 2 })).id);
      return { ...base, ...(await single(base.work, 'consume', roleArgv(ctx.impl, 'consume', { queue: base.root }))), accepted, requests: [], role: 'consume', unfinished: [holder.id] };
    },
  },
];

/** A queue with one job whose owner died after recording an execution: recover must break the claim and publish a lost receipt. */
export async function prepareRecover(ctx: CaseContext, dir: string): Promise<Prepared> {
  const { queue, ...base } = await prepareBase(ctx, dir);
  const [a] = crashJobs(base.work);
  const staged = await stageJob(queue, (a as { request: JobRequest }).request);
  const owner = await deadOwner();
  await plantRecord(queue, staged.dir, 'claim.1.json', 'claim', claimRecord(staged.id, 1, owner));
  await plantRecord(queue, staged.dir, 'exec.1.json', 'exec', execRecord(staged.id, 1, owner));
  for (const stream of ['stdout.1', 'stderr.1']) await plantBytes(path.join(staged.dir, stream), '');
  const argv = roleArgv(ctx.impl, 'recover', { queue: base.root });
  return { ...base, argv, scriptArgv: argv, accepted: [staged.id], requests: [] };
}

/**
 * A queue with one job that runs past RENEW_INTERVAL of the default lease
 * (10 s; 12 s leaves 2 s for scheduling), so its owner renews the lease at
 * least once: the audit sees how state.<g>.json is published (PUB-4).
 */
export async function prepareHeartbeat(ctx: CaseContext, dir: string): Promise<Prepared> {
  const { queue, ...base } = await prepareBase(ctx, dir);
  const staged = await stageJob(queue, { argv: sh('sleep 12'), cwd: base.work });
  const argv = roleArgv(ctx.impl, 'consume', { queue: base.root });
  return { ...base, argv, scriptArgv: argv, accepted: [staged.id], requests: [] };
}

/** What work/rc.<tag> and work/out.<tag> say a produce returned: the accepted ids, and the requests to produce again. */
export async function producedIds(prepared: Prepared, acceptedBefore: (tag: string) => boolean = () => true): Promise<{ accepted: string[]; retry: Request[] }> {
  const accepted: string[] = [];
  const retry: Request[] = [];
  for (const request of prepared.requests) {
    const rc = (await readFile(path.join(prepared.work, `rc.${request.tag}`), 'utf8').catch(() => '')).trim();
    const out = (await readFile(path.join(prepared.work, `out.${request.tag}`), 'utf8').catch(() => '')).trim();
    if (rc === '0' && JOB_ID_PATTERN.test(out) && acceptedBefore(request.tag)) accepted.push(out);
    else retry.push(request);
  }
  return { accepted, retry };
}

/**
 * Recovery by the implementation itself: its recover role (if any), produce
 * again every request that was not accepted, then consume. Adds the ids it
 * accepts to `accepted`; returns the failures, each prefixed "recovery: ".
 */
export async function recoverAndDrain(ctx: CaseContext, root: string, accepted: string[], retry: readonly Request[], release?: string): Promise<Failure[]> {
  const failures: Failure[] = [];
  const fail = (clauses: string[], message: string, evidence: string[]): void => {
    failures.push({ clauses, message: `recovery: ${message}`, evidence });
  };
  if (ctx.impl.roles.recover !== undefined) {
    const recovered = await ctx.role('recover', { queue: root });
    if (recovered.code !== 0 || recovered.timedOut) fail(['RECOV-3', 'RECOV-1'], 'recover failed on the queue the crash left', [describeExit(recovered), ...listing(await ctx.snapshot(root))]);
  }
  for (const request of retry) {
    const produced = await ctx.role('produce', { queue: root, request: request.file });
    const id = produced.stdout.trim();
    if (produced.code === 0 && JOB_ID_PATTERN.test(id)) {
      accepted.push(id);
      continue;
    }
    if (produced.code === 3 && request.dedupe !== undefined) {
      const snapshot = await ctx.snapshot(root);
      const holder = [...snapshot.jobs.values()].find((job) => job.spec?.dedupe === request.dedupe);
      if (holder !== undefined) continue; // the crashed produce published it after all: the key is rightly held
      fail(['DEDUPE-3', 'RECOV-3'], `producing request ${request.tag} again was refused for a held dedupe key, but no published job holds it (a dead producer's hold must stop counting)`, [describeExit(produced), ...listing(snapshot)]);
      continue;
    }
    fail(['RECOV-3', 'ENQ-6'], `producing request ${request.tag} again failed on the queue the crash left`, [describeExit(produced), ...listing(await ctx.snapshot(root))]);
  }
  if (release !== undefined) {
    // HOLD-2: releasing again is a success whatever the crash left (released already, or opened).
    const released = await ctx.role('release', { queue: root, id: release });
    if (released.code !== 0 || released.timedOut) fail(['HOLD-2', 'RECOV-3'], `releasing job ${release} again failed on the queue the crash left`, [describeExit(released), ...listing(await ctx.snapshot(root))]);
  }
  const consumed = await ctx.role('consume', { queue: root });
  if (consumed.code !== 0 || consumed.timedOut) fail(['RECOV-3'], 'consume failed on the queue the crash left', [describeExit(consumed), ...listing(await ctx.snapshot(root))]);
  return failures;
}

/**
 * What each scenario's jobs must show once recovered. `cancelAccepted`: the
 * cancel role had exited 0 before the crash, so its job must end cancelled
 * without running.
 */
export async function scenarioChecks(scenario: ScenarioName, prepared: Prepared, snapshot: QueueSnapshot, starts: ReadonlyMap<string, number>, cancelAccepted: boolean): Promise<Failure[]> {
  const failures: Failure[] = [];
  for (const job of snapshot.jobs.values()) {
    const receipt = job.receipt;
    if (receipt === undefined) continue;
    const n = starts.get(job.id) ?? 0;
    const evidence = (): string[] => [`receipt: ${JSON.stringify(receipt).slice(0, 400)}`, `starts: ${n}`, ...listing(snapshot, new Set([job.id]))];
    // AFTER-3: a dependency that ended without satisfying its dependent (A lost to the crash) cancels it, unrun.
    const unmet = (job.spec?.after ?? []).find((dependency) => {
      const dep = snapshot.jobs.get(dependency.job_id)?.receipt;
      return dep !== undefined && dependency.when === 'succeeded' && dep.outcome !== 'succeeded';
    });
    if (unmet !== undefined) {
      if (receipt.outcome !== 'cancelled' || n !== 0) failures.push({ clauses: ['AFTER-3'], message: `job ${job.id} runs only after ${unmet.job_id} succeeded, which ended otherwise: it must end cancelled without running; it ended ${receipt.outcome} after ${n} starts`, evidence: evidence() });
      continue;
    }
    if (job.id === prepared.cancelled) {
      const ok = receipt.outcome === 'cancelled' ? n === 0 : !cancelAccepted && receipt.outcome === 'succeeded';
      if (!ok) failures.push({ clauses: ['CANCEL-1', 'CANCEL-2', 'CLAIM-6'], message: `job ${job.id} was ${cancelAccepted ? 'cancelled (the cancel role exited 0)' : 'possibly cancelled'} and must end cancelled without running${cancelAccepted ? '' : ', or run and succeed'}; it ended ${receipt.outcome} after ${n} starts`, evidence: evidence() });
      continue;
    }
    if (receipt.outcome === 'succeeded') {
      if (n !== 1) failures.push({ clauses: ['RETRY-2', 'I2'], message: `job ${job.id} succeeded but its command started ${n} times`, evidence: evidence() });
      if (job.spec?.stdin !== null && job.spec !== undefined) {
        const summary = receipt.stdout;
        const out = summary === null ? undefined : await readFile(path.join(job.dir, `stdout.${summary.gen}`)).catch(() => undefined);
        if (out?.toString('utf8') !== STDIN_A) failures.push({ clauses: ['ENQ-5', 'EXEC-7', 'I1'], message: `job ${job.id} read ${JSON.stringify(out?.toString('latin1'))} from its stdin, the request said ${JSON.stringify(STDIN_A)}`, evidence: evidence() });
      }
    } else if (receipt.outcome === 'lost') {
      if (scenario === 'produce') failures.push({ clauses: ['RECOV-3', 'I3'], message: `job ${job.id} was lost although no consumer crashed`, evidence: evidence() });
    } else {
      failures.push({ clauses: ['RECOV-3', 'I3'], message: `job ${job.id} ended ${receipt.outcome} (${receipt.exit_code}); its command succeeds, so only succeeded or lost (an attempt died with its owner) can be right`, evidence: evidence() });
    }
  }
  return failures;
}
