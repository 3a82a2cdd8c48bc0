/**
 * The cases of spec/security.md (a hostile queue root: security-root.ts;
 * the planted names of hostile/job-entries: security-planted.ts).
 *
 * - hostile/hazard-table (SEC-10, REC-9): one job per cell of SEC-10's table
 *   where implementations differed, each with the table's one action;
 * - hostile/damaged-layout (LAYOUT-10): a queue whose lanes/ is a symlink is
 *   refused by every operation, not served in part.
 *
 * Hostile input (SEC-2..SEC-6, I6, I7): a real queue with one path replaced
 * by something hostile: a symlink to a file or directory OUTSIDE the queue
 * (a valid record there, so following it would "work"), a FIFO, an oversized
 * or malformed record, a record of another uid or writable by others. Then
 * the implementation's recover (if any), produce (for directories) and
 * consume roles run, and:
 *
 * - the outside target's content, mode and mtime are unchanged (no write
 *   escapes the queue);
 * - no role hangs or dies by a signal (exiting with an error is fine);
 * - the hostile entry is still there (readers never delete it);
 * - the job whose record could not be validated never ran, and if it got a
 *   receipt, that receipt is `rejected` (where the spec itself is bad).
 */
import { chmod, chown, link, lstat, mkdir, readdir, rename, symlink, unlink, writeFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { selfIdentity } from '../../src/model/identity.ts';
import { keyHash, readyEntryName } from '../../src/model/layout.ts';
import type { Queue } from '../../src/model/queue.ts';
import { serializeRecord, type JobRequest, type SpecRecord } from '../../src/records/codec.ts';
import { LEASE_MIN } from '../../src/base/constants.ts';
import { type CaseContext, type ConformanceCase, countBy, readStarts } from '../runner/case.ts';
import { claimRecord, deadOwner, endRecord, execRecord, foreignOwner, receiptRecord, stateRecord } from '../runner/fixtures.ts';
import { entriesOf, listing } from '../runner/inspect.ts';
import { describeExit, type ProcessResult } from '../runner/process.ts';
import { fingerprint, freshQueue, plantBytes, plantRecord, reopen, type Staged, stageJob, writeRequest } from '../runner/stage.ts';
import { logged } from './jobs.ts';
import { PLANTED_SCENARIOS } from './security-planted.ts';

export interface HostileEnv {
  ctx: CaseContext;
  queue: Queue;
  root: string;
  work: string;
  outside: string;
  log: string;
  stage: (extra?: Partial<JobRequest>) => Promise<Staged>;
  /** The start-log tag of the job being staged. */
  tag: string;
}

export interface Planted {
  /** The hostile entry inside the queue. */
  hostile: string;
  /** More planted entries readers must leave exactly as they are. */
  keepAlso?: string[];
  /** The job must run exactly once (what was planted must be ignored, not obeyed). */
  mustRun?: boolean;
  /** Nothing may be added to the job's directory (a finished job is never claimed again). */
  frozen?: boolean;
  /** Whether readers must leave the hostile entry in place (default true). */
  keep?: boolean;
  /** A file or directory outside the queue that must not change. */
  outside?: string;
  /** The job that must never run, when there is one. */
  mustNotRun: boolean;
  /** rejected-or-none: the spec is bad, so a receipt, if any, says rejected. none: nothing may be published for the job. */
  receipt: 'rejected-or-none' | 'none' | 'any';
  victim: Staged;
  /** Also run produce with this request (directory-level plants). */
  produce?: JobRequest;
}


/** Moves `target` outside the queue and puts a symlink to it in its place. */
async function swapForSymlink(env: HostileEnv, target: string, label: string): Promise<string> {
  const away = path.join(env.outside, `${env.tag}-${label}`);
  await rename(target, away);
  await symlink(away, target);
  return away;
}

function specOfVictim(victim: Staged): SpecRecord {
  return victim.spec;
}

export type Build = (env: HostileEnv) => Promise<Planted>;

const withClaim = async (env: HostileEnv, victim: Staged, more: ('exec' | 'state' | 'end' | 'receipt')[]): Promise<void> => {
  const owner = await deadOwner();
  await plantRecord(env.queue, victim.dir, 'claim.1.json', 'claim', claimRecord(victim.id, 1, owner));
  if (more.includes('exec')) await plantRecord(env.queue, victim.dir, 'exec.1.json', 'exec', execRecord(victim.id, 1, owner));
  if (more.includes('state')) {
    const { publishRecord } = await import('../../src/fs/safefs.ts');
    const { encodeRecord } = await import('../../src/records/codec.ts');
    await publishRecord(victim.dir, 'state.1.json', encodeRecord('state', stateRecord(victim.id, 1)), 'rename', env.queue.fsOptions);
  }
  if (more.includes('end')) await plantRecord(env.queue, victim.dir, 'end.1.json', 'end', endRecord(victim.id, 1));
  if (more.includes('receipt')) {
    await plantBytes(path.join(victim.dir, 'stdout.1'), '');
    await plantBytes(path.join(victim.dir, 'stderr.1'), '');
    await plantRecord(env.queue, victim.dir, 'receipt.json', 'receipt', receiptRecord(victim.id, 1, await selfIdentity()));
  }
};

function symlinkInJob(name: string, prepare: (env: HostileEnv, victim: Staged) => Promise<void>, receipt: Planted['receipt'], mustNotRun = true, extra: Partial<JobRequest> = {}): Build {
  return async (env) => {
    const victim = await env.stage(extra);
    await prepare(env, victim);
    const hostile = path.join(victim.dir, name);
    const outside = await swapForSymlink(env, hostile, name);
    return { hostile, outside, mustNotRun, receipt, victim };
  };
}

function symlinkQueueDir(dir: string, mustNotRun: boolean, extra: Partial<JobRequest> = {}): Build {
  return async (env) => {
    const victim = await env.stage(extra);
    const hostile = path.join(env.root, dir);
    const outside = await swapForSymlink(env, hostile, dir);
    return { hostile, outside, mustNotRun, receipt: 'any', victim, produce: { argv: logged(env.log, 'produced'), cwd: env.work, dedupe: 'hostile key', lane: 'hostile lane' } };
  };
}

async function replaceFile(file: string, bytes: Buffer | string, mode = 0o600): Promise<void> {
  await unlink(file);
  await writeFile(file, bytes, { mode });
  await chmod(file, mode);
}

function mkfifo(file: string): void {
  execFileSync('mkfifo', ['-m', '0600', file]);
}

export interface Scenario {
  name: string;
  clauses: string[];
  root?: boolean;
  /** Replaces a directory or record of the queue itself: needs a queue of its own. */
  queueLevel?: boolean;
  build: Build;
}

const SYMLINK = ['SEC-2', 'SEC-8', 'I6'];

const SCENARIOS: Scenario[] = [
  { name: 'symlink-spec', clauses: SYMLINK, build: symlinkInJob('spec.json', async () => undefined, 'rejected-or-none') },
  { name: 'symlink-stdin', clauses: [...SYMLINK, 'EXEC-7'], build: symlinkInJob('stdin', async () => undefined, 'rejected-or-none', true, { stdin_text: 'data' }) },
  { name: 'symlink-claim', clauses: [...SYMLINK, 'CLAIM-3'], build: symlinkInJob('claim.1.json', (env, v) => withClaim(env, v, []), 'none') },
  { name: 'symlink-exec', clauses: [...SYMLINK, 'RECOV-1'], build: symlinkInJob('exec.1.json', (env, v) => withClaim(env, v, ['exec']), 'none') },
  { name: 'symlink-state', clauses: SYMLINK, build: symlinkInJob('state.1.json', (env, v) => withClaim(env, v, ['state']), 'any', false) },
  { name: 'symlink-end', clauses: [...SYMLINK, 'RETRY-2'], build: symlinkInJob('end.1.json', (env, v) => withClaim(env, v, ['exec', 'end']), 'any') },
  { name: 'symlink-receipt', clauses: [...SYMLINK, 'RCPT-6'], build: symlinkInJob('receipt.json', (env, v) => withClaim(env, v, ['exec', 'receipt']), 'any') },
  {
    name: 'symlink-ready-entry',
    clauses: SYMLINK,
    build: async (env) => {
      const victim = await env.stage();
      const hostile = path.join(env.root, 'ready', readyEntryName(specOfVictim(victim).priority, victim.id));
      const outside = await swapForSymlink(env, hostile, 'ready-entry');
      // READY-2 lets the publisher of the receipt remove the entry: removing a link follows nothing.
      return { hostile, keep: false, outside, mustNotRun: false, receipt: 'any', victim };
    },
  },
  {
    name: 'symlink-job-dir',
    clauses: SYMLINK,
    build: async (env) => {
      const victim = await env.stage();
      const outside = await swapForSymlink(env, victim.dir, 'job-dir');
      return { hostile: victim.dir, outside, mustNotRun: true, receipt: 'none', victim };
    },
  },
  {
    name: 'symlink-lane-dir',
    clauses: [...SYMLINK, 'LANE-1'],
    build: async (env) => {
      const victim = await env.stage({ lane: 'the lane' });
      const hostile = path.join(env.root, 'lanes', keyHash('the lane'));
      await mkdir(hostile, { mode: 0o700 });
      const outside = await swapForSymlink(env, hostile, 'lane-dir');
      return { hostile, outside, mustNotRun: true, receipt: 'any', victim };
    },
  },
  { name: 'symlink-fsjob-json', queueLevel: true, clauses: [...SYMLINK, 'LAYOUT-2'], build: async (env) => ({ ...(await symlinkQueueDir('fsjob.json', true)(env)) }) },
  { name: 'symlink-tmp', queueLevel: true, clauses: [...SYMLINK, 'LAYOUT-3'], build: symlinkQueueDir('tmp', false) },
  { name: 'symlink-jobs', queueLevel: true, clauses: SYMLINK, build: symlinkQueueDir('jobs', true) },
  { name: 'symlink-ready', queueLevel: true, clauses: SYMLINK, build: symlinkQueueDir('ready', false) },
  { name: 'symlink-dedupe', queueLevel: true, clauses: [...SYMLINK, 'DEDUPE-2'], build: symlinkQueueDir('dedupe', false) },
  { name: 'symlink-lanes', queueLevel: true, clauses: [...SYMLINK, 'LANE-1'], build: symlinkQueueDir('lanes', true, { lane: 'the lane' }) },
  { name: 'symlink-workers', queueLevel: true, clauses: SYMLINK, build: symlinkQueueDir('workers', false) },
  {
    name: 'fifo-spec',
    clauses: ['SEC-3', 'I7'],
    build: async (env) => {
      const victim = await env.stage();
      const hostile = path.join(victim.dir, 'spec.json');
      await unlink(hostile);
      mkfifo(hostile);
      return { hostile, mustNotRun: true, receipt: 'rejected-or-none', victim };
    },
  },
  {
    name: 'fifo-claim',
    clauses: ['SEC-3', 'CLAIM-3', 'I7'],
    build: async (env) => {
      const victim = await env.stage();
      const hostile = path.join(victim.dir, 'claim.1.json');
      mkfifo(hostile);
      return { hostile, mustNotRun: true, receipt: 'none', victim };
    },
  },
  {
    name: 'oversized-spec',
    clauses: ['SEC-4', 'REC-2', 'I7'],
    build: async (env) => {
      const victim = await env.stage();
      const hostile = path.join(victim.dir, 'spec.json');
      await replaceFile(hostile, `${JSON.stringify({ ...victim.spec, 'x-pad': 'a'.repeat(1_100_000) })}\n`);
      return { hostile, mustNotRun: true, receipt: 'rejected-or-none', victim };
    },
  },
  {
    name: 'malformed-spec-not-compact',
    clauses: ['REC-1', 'REC-4', 'I7'],
    build: async (env) => {
      const victim = await env.stage();
      const hostile = path.join(victim.dir, 'spec.json');
      await replaceFile(hostile, `${JSON.stringify(victim.spec, null, 1)}\n`);
      return { hostile, mustNotRun: true, receipt: 'rejected-or-none', victim };
    },
  },
  {
    name: 'malformed-spec-bad-utf8',
    clauses: ['REC-1', 'REC-4', 'I7'],
    build: async (env) => {
      const victim = await env.stage({ labels: { note: 'a#b' } });
      const hostile = path.join(victim.dir, 'spec.json');
      const bytes = serializeRecord(victim.spec);
      bytes[bytes.indexOf('a#b') + 1] = 0xff;
      await replaceFile(hostile, bytes);
      return { hostile, mustNotRun: true, receipt: 'rejected-or-none', victim };
    },
  },
  {
    name: 'malformed-spec-version-2',
    clauses: ['VER-1', 'REC-4', 'I7'],
    build: async (env) => {
      const victim = await env.stage();
      const hostile = path.join(victim.dir, 'spec.json');
      await replaceFile(hostile, serializeRecord({ ...victim.spec, fsjob: '2.0' }));
      return { hostile, mustNotRun: true, receipt: 'rejected-or-none', victim };
    },
  },
  {
    name: 'malformed-claim-not-compact',
    clauses: ['REC-1', 'REC-4', 'CLAIM-3', 'I7'],
    build: async (env) => {
      const victim = await env.stage();
      const hostile = path.join(victim.dir, 'claim.1.json');
      const claim = claimRecord(victim.id, 1, await deadOwner());
      await plantBytes(hostile, serializeRecord(claim).toString('utf8').replace('"gen":1', '"gen": 1'));
      return { hostile, mustNotRun: true, receipt: 'none', victim };
    },
  },
  {
    name: 'foreign-uid-spec',
    clauses: ['SEC-6', 'I7'],
    root: true,
    build: async (env) => {
      const victim = await env.stage();
      const hostile = path.join(victim.dir, 'spec.json');
      await chown(hostile, 65534, 65534);
      return { hostile, mustNotRun: true, receipt: 'rejected-or-none', victim };
    },
  },
  {
    name: 'world-writable-spec',
    clauses: ['SEC-5', 'I7'],
    build: async (env) => {
      const victim = await env.stage();
      const hostile = path.join(victim.dir, 'spec.json');
      await chmod(hostile, 0o666);
      return { hostile, mustNotRun: true, receipt: 'rejected-or-none', victim };
    },
  },
];

// Planted names and states last: the failures of the older scenarios keep their order.
SCENARIOS.push(...PLANTED_SCENARIOS);

/** Seconds a role may take here: hanging on a FIFO must show up as a failure, not a long wait. */
const HOSTILE_TIMEOUT_MS = 30_000;

async function kindAt(file: string): Promise<string> {
  try {
    const st = await lstat(file);
    return st.isSymbolicLink() ? 'symlink' : st.isFIFO() ? 'fifo' : st.isDirectory() ? 'dir' : st.isFile() ? 'file' : 'other';
  } catch {
    return 'missing';
  }
}

interface Armed {
  scenario: Scenario;
  planted: Planted;
  kindBefore: string;
  before: string | undefined;
  /** Fingerprints of keepAlso, and the job directory's names when frozen. */
  kept: string[];
  names: string[];
}

/**
 * Plants each scenario in one queue (each with its own victim job), runs
 * recover (if any), produce (for queue-level plants) and consume once, and
 * judges every scenario on what they did.
 */
async function runHostile(ctx: CaseContext, scenarios: readonly Scenario[]): Promise<void> {
  const root = await ctx.newQueue('hostile');
  const work = await ctx.subdir('hostile/work');
  const outside = await ctx.subdir('outside');
  const queue = await reopen(root);
  const log = path.join(work, 'starts.log');
  const armed: Armed[] = [];
  const requests: JobRequest[] = [];
  for (const scenario of scenarios) {
    const env: HostileEnv = {
      ctx,
      queue,
      root,
      work,
      outside,
      log,
      tag: scenario.name,
      stage: (extra = {}) => stageJob(queue, { argv: logged(log, scenario.name), cwd: work, ...extra }),
    };
    const planted = await scenario.build(env);
    if (planted.produce !== undefined) requests.push(planted.produce);
    const kept = await Promise.all((planted.keepAlso ?? []).map((file) => fingerprint(file)));
    const names = planted.frozen === true ? (await readdir(planted.victim.dir)).filter((n) => !n.startsWith('.')).sort() : [];
    armed.push({ scenario, planted, kindBefore: await kindAt(planted.hostile), before: planted.outside === undefined ? undefined : await fingerprint(planted.outside), kept, names });
  }
  const timeoutMs = Math.min(ctx.impl.timeoutMs, HOSTILE_TIMEOUT_MS);
  const runs: ProcessResult[] = [];
  if (ctx.impl.roles.recover !== undefined) runs.push(await ctx.role('recover', { queue: root }, { timeoutMs }));
  for (const [index, request] of requests.entries()) {
    const { writeRequest } = await import('../runner/stage.ts');
    const file = await writeRequest(path.join(ctx.dir, 'requests'), `hostile-${index}`, request);
    runs.push(await ctx.role('produce', { queue: root, request: file }, { timeoutMs }));
  }
  runs.push(await ctx.role('consume', { queue: root }, { timeoutMs }));
  const snapshot = await ctx.snapshot(root);
  const starts = countBy(await readStarts(log));
  const hasFifo = armed.some((a) => a.kindBefore === 'fifo');
  const evidenceOf = (a?: Armed): string[] => [
    ...runs.map(describeExit),
    ...(a === undefined ? [] : [`hostile entry: ${path.relative(root, a.planted.hostile)} (${a.kindBefore})`]),
    ...listing(snapshot, a === undefined || a.scenario.queueLevel === true ? undefined : new Set([a.planted.victim.id])),
  ];
  for (const result of runs) {
    if (result.timedOut) ctx.fail(hasFifo ? ['SEC-3', 'I7'] : ['I7', 'SEC-3'], `a role hung on hostile input and was killed after ${timeoutMs} ms`, evidenceOf());
    else if (result.signal !== null) ctx.fail(['I7'], `a role crashed (killed by ${result.signal}) on hostile input; an error exit is fine, a crash is not`, evidenceOf());
  }
  for (const a of armed) {
    const { scenario, planted } = a;
    const where = path.relative(root, planted.hostile);
    const fail = (clauses: string[], message: string, extra: string[] = []): void => ctx.fail(clauses, `${scenario.name}: ${message}`, [...extra, ...evidenceOf(a)]);
    if (planted.outside !== undefined && a.before !== undefined) {
      const after = await fingerprint(planted.outside);
      if (after !== a.before) {
        const was = a.before.split('\n');
        fail(['SEC-2', 'SEC-8', 'I6'], `something was written through the symlink ${where}: the target outside the queue changed`, after.split('\n').filter((line) => !was.includes(line)).map((line) => `now: ${line}`));
      }
    }
    const kindAfter = await kindAt(planted.hostile);
    const first = scenario.clauses[0] ?? 'I7';
    if (planted.keep !== false && kindAfter !== a.kindBefore) {
      fail([first, 'I7'], `the hostile entry ${where} was ${kindAfter === 'missing' ? 'deleted' : `replaced by a ${kindAfter}`}; readers refuse and report it, never delete it`);
    }
    for (const [i, file] of (planted.keepAlso ?? []).entries()) {
      const now = await fingerprint(file);
      if (now !== a.kept[i]) fail([first, 'I7'], `${path.relative(root, file)} was ${now.includes(': missing') ? 'deleted' : 'changed'}; what a reader does not understand it leaves alone`, [`before: ${a.kept[i]?.split('\n')[0] ?? ''}`, `now: ${now.split('\n')[0]}`]);
    }
    if (planted.frozen === true) {
      const names = (await readdir(planted.victim.dir).catch(() => [] as string[])).filter((n) => !n.startsWith('.')).sort();
      const added = names.filter((n) => !a.names.includes(n));
      if (added.length > 0) fail([first, 'I7'], `${path.relative(root, planted.victim.dir)}/ gained ${added.join(' ')}; nothing may be written for this job`);
    }
    const n = starts.get(scenario.name) ?? 0;
    if (planted.mustNotRun && n > 0) {
      fail([first, 'I6', 'I7'], `the job ran (${n} start${n > 1 ? 's' : ''}) although one of its records could not be validated (${where} is hostile)`);
    }
    if (planted.mustRun === true && n !== 1) {
      fail([first, 'I7'], `the job must run exactly once (what was planted at ${where} is to be ignored), yet it started ${n} times`);
    }
    const job = snapshot.jobs.get(planted.victim.id);
    const receipt = job?.receipt;
    if (receipt !== undefined && planted.receipt === 'rejected-or-none' && receipt.outcome !== 'rejected') {
      fail(['CLAIM-6', 'I7'], `a job whose spec could not be validated must be rejected or left alone; it got a ${receipt.outcome} receipt`);
    }
    if (planted.receipt === 'none' && job !== undefined && job.entries.some((e) => e.name === 'receipt.json')) {
      fail(['CLAIM-3', 'I7'], 'nothing may be published for a job whose claim could not be validated; it got a receipt');
    }
    if (planted.receipt === 'none' && job !== undefined && job.claims.some((g) => g > 1)) {
      fail(['CLAIM-3', 'RECOV-1', 'I7'], `a claim that could not be validated (or whose execution cannot be proven stopped) was broken: claims ${job.claims.join(',')}`);
    }
  }
}

const JOB_LEVEL = SCENARIOS.filter((s) => s.queueLevel !== true);
const union = (lists: string[][]): string[] => [...new Set(lists.flat())];

async function recoverAndConsume(ctx: CaseContext, root: string): Promise<ProcessResult[]> {
  const runs: ProcessResult[] = [];
  if (ctx.impl.roles.recover !== undefined) runs.push(await ctx.role('recover', { queue: root }));
  runs.push(await ctx.role('consume', { queue: root }));
  return runs;
}

async function hazardTableCase(ctx: CaseContext): Promise<void> {
  const f = await freshQueue(ctx, 'hazards');
  const outside = await ctx.subdir('hazards/outside');
  const job = (tag: string, extra: Record<string, unknown> = {}): Promise<Staged> => stageJob(f.queue, { argv: logged(f.log, tag), cwd: f.work, ...extra });

  // stdin hard-linked to a file outside the queue (same bytes, so only the link count tells).
  const linked = await job('linked', { stdin_text: 'outside\n' });
  const secret = path.join(outside, 'secret');
  await writeFile(secret, 'outside\n', { mode: 0o600 });
  await unlink(path.join(linked.dir, 'stdin'));
  await link(secret, path.join(linked.dir, 'stdin'));

  // The current generation's end record is invalid: the job is damaged, left alone.
  const ended = await job('ended');
  const dead = await deadOwner();
  await plantRecord(f.queue, ended.dir, 'claim.1.json', 'claim', claimRecord(ended.id, 1, dead, Date.now() - 5000));
  await plantBytes(path.join(ended.dir, 'end.1.json'), '{ "not": "an end record" }\n');

  // An invalid cancel.json still cancels: its name blocks every valid request.
  const cancelled = await job('cancelled');
  await plantBytes(path.join(cancelled.dir, 'cancel.json'), 'garbage\n');

  // A foreign open claim whose state.1.json is a symlink: the renewal cannot be read, the owner is unknown.
  const unknown = await job('unknown');
  const self = await selfIdentity();
  await plantRecord(f.queue, unknown.dir, 'claim.1.json', 'claim', claimRecord(unknown.id, 1, foreignOwner(self), Date.now() - 3_600_000, LEASE_MIN));
  const stateOutside = path.join(outside, 'state.1.json');
  await writeFile(stateOutside, serializeRecord({ ...stateRecord(unknown.id, 1), heartbeat_ms: Date.now() - 3_600_000 }), { mode: 0o600 });
  await symlink(stateOutside, path.join(unknown.dir, 'state.1.json'));

  // A ready entry that is a symlink counts by its name: the job runs.
  const byName = await job('byname');
  const entry = (await entriesOf(path.join(f.root, 'ready'))).find((e) => e.name.endsWith(byName.id));
  if (entry !== undefined) {
    const target = path.join(outside, 'ready-target');
    await writeFile(target, '', { mode: 0o600 });
    await unlink(path.join(f.root, 'ready', entry.name));
    await symlink(target, path.join(f.root, 'ready', entry.name));
  }

  // A spec writable by others: rejected, invalid_spec.
  const wide = await job('wide');
  await chmod(path.join(wide.dir, 'spec.json'), 0o666);

  // An invalid end record that says counted false: in its bytes, not valid
  // (not compact). The bytes a careless reader greps must not count.
  const uncounted = (id: string, gen: number): string => serializeRecord(endRecord(id, gen, { reason: 'released', counted: false, status: null })).toString('utf8').replace(`"gen":${gen}`, `"gen": ${gen}`);

  // g is the highest CLAIM generation: an invalid end.1.json below an open
  // claim 2 of a dead owner only counts attempt 1; the orphan is recovered
  // and runs attempt 2 (max_attempts 2). Read as "the highest end record",
  // end.1.json would leave the job alone.
  const lower = await job('lowerend', { max_attempts: 2 });
  await plantRecord(f.queue, lower.dir, 'claim.1.json', 'claim', claimRecord(lower.id, 1, dead, Date.now() - 9000));
  await plantRecord(f.queue, lower.dir, 'exec.1.json', 'exec', execRecord(lower.id, 1, dead));
  await plantBytes(path.join(lower.dir, 'end.1.json'), uncounted(lower.id, 1));
  await plantRecord(f.queue, lower.dir, 'claim.2.json', 'claim', claimRecord(lower.id, 2, dead, Date.now() - 5000));

  // The highest claim is invalid but a valid end.1.json closes it: nobody
  // needs its content, so the job is queued and runs; it does not freeze.
  const closed = await job('closedclaim');
  await plantBytes(path.join(closed.dir, 'claim.1.json'), '{"fsjob":"1.1","type":"claim"}\n');
  await plantRecord(f.queue, closed.dir, 'end.1.json', 'end', endRecord(closed.id, 1, { reason: 'released', counted: false, status: null, retry_at_ms: Date.now() - 1000 }));

  // RETRY-1 over a history: attempt 1's end record is invalid (its bytes
  // say counted false) below attempt 2's valid one; both attempts count, so
  // max_attempts 2 is reached: never run again, lost (owner_lost).
  const history = await job('history', { max_attempts: 2 });
  await plantRecord(f.queue, history.dir, 'claim.1.json', 'claim', claimRecord(history.id, 1, dead, Date.now() - 9000));
  await plantRecord(f.queue, history.dir, 'exec.1.json', 'exec', execRecord(history.id, 1, dead));
  await plantBytes(path.join(history.dir, 'end.1.json'), uncounted(history.id, 1));
  await plantRecord(f.queue, history.dir, 'claim.2.json', 'claim', claimRecord(history.id, 2, dead, Date.now() - 5000));
  await plantRecord(f.queue, history.dir, 'exec.2.json', 'exec', execRecord(history.id, 2, dead));
  await plantRecord(f.queue, history.dir, 'end.2.json', 'end', endRecord(history.id, 2, { retry_at_ms: Date.now() - 1000 }));

  const runs = await recoverAndConsume(ctx, f.root);
  const snapshot = await ctx.snapshot(f.root);
  const starts = countBy(await readStarts(f.log));
  const all = new Set([linked.id, ended.id, cancelled.id, unknown.id, byName.id, wide.id, lower.id, closed.id, history.id]);
  const evidence = (): string[] => [...runs.map(describeExit), ...listing(snapshot, all)];
  const receipt = (s: Staged) => snapshot.jobs.get(s.id)?.receipt;

  const r1 = receipt(linked);
  ctx.check(r1?.outcome === 'rejected' && r1.reason === 'stdin_unusable' && (starts.get('linked') ?? 0) === 0, ['SEC-10', 'EXEC-7', 'SEC-9'], `a stdin with two hard links (one outside the queue) must be rejected, stdin_unusable, never run; got ${r1?.outcome ?? 'no receipt'} ${r1?.reason ?? ''}, ${starts.get('linked') ?? 0} starts`, evidence);
  const s2 = snapshot.jobs.get(ended.id);
  ctx.check(s2?.receipt === undefined && JSON.stringify(s2?.claims) === '[1]' && (starts.get('ended') ?? 0) === 0, ['SEC-10', 'REC-9', 'STATUS-1'], `a job whose current end record is invalid is damaged and left alone (no claim, no receipt, never run); claims ${s2?.claims.join(',')}, receipt ${s2?.receipt?.outcome ?? 'none'}`, evidence);
  const r3 = receipt(cancelled);
  ctx.check(r3?.outcome === 'cancelled' && (starts.get('cancelled') ?? 0) === 0, ['REC-9', 'SEC-10', 'CLAIM-6'], `an invalid cancel.json still cancels the job (REC-9: the name counts); got ${r3?.outcome ?? 'no receipt'}, ${starts.get('cancelled') ?? 0} starts`, evidence);
  const s4 = snapshot.jobs.get(unknown.id);
  ctx.check(JSON.stringify(s4?.claims) === '[1]' && (starts.get('unknown') ?? 0) === 0, ['SEC-10', 'LEASE-3'], `a foreign claim whose state.1.json is a symlink has an unknown owner: never broken; claims ${s4?.claims.join(',')}`, evidence);
  const r5 = receipt(byName);
  ctx.check(r5?.outcome === 'succeeded' && (starts.get('byname') ?? 0) === 1, ['SEC-10', 'READY-1'], `a job whose ready entry is a symlink runs (the entry counts by its name, never opened); got ${r5?.outcome ?? 'no receipt'}`, evidence);
  const r6 = receipt(wide);
  ctx.check(r6?.outcome === 'rejected' && r6.reason === 'invalid_spec' && (starts.get('wide') ?? 0) === 0, ['SEC-10', 'SEC-5'], `a spec writable by others is rejected, invalid_spec; got ${r6?.outcome ?? 'no receipt'} ${r6?.reason ?? ''}`, evidence);
  const s9 = snapshot.jobs.get(history.id);
  ctx.check((starts.get('history') ?? 0) === 0, ['RETRY-1', 'RETRY-2', 'SEC-10'], `an invalid end.1.json (its bytes say counted false) counts attempt 1, and attempt 2 ended counted: max_attempts 2 is used up, so the job must never run again; it started ${starts.get('history') ?? 0} times`, evidence);
  ctx.check(s9?.receipt?.outcome === 'lost' && s9.receipt.reason === 'owner_lost' && s9.receipt.attempts === 2, ['RETRY-1', 'CLAIM-6'], `with both attempts used, the next claimer publishes a lost receipt (owner_lost, attempts 2); got ${s9?.receipt?.outcome ?? 'none'} ${s9?.receipt?.reason ?? ''} (attempts ${s9?.receipt?.attempts ?? '?'})`, evidence);
  const s7 = snapshot.jobs.get(lower.id);
  ctx.check(
    s7?.receipt?.outcome === 'succeeded' && s7.receipt.attempts === 2 && (starts.get('lowerend') ?? 0) === 1,
    ['SEC-10', 'STATUS-1', 'RECOV-2'],
    `g in SEC-10's rows is the highest claim generation: end.1.json below the open claim 2 of a dead owner is invalid, which counts attempt 1 and freezes nothing; the orphan must be recovered and run as attempt 2 of 2; claims ${s7?.claims.join(',')}, receipt ${s7?.receipt?.outcome ?? 'none'} (attempts ${s7?.receipt?.attempts ?? '?'}), ${starts.get('lowerend') ?? 0} starts`,
    evidence,
  );
  const s8 = snapshot.jobs.get(closed.id);
  ctx.check(
    s8?.receipt?.outcome === 'succeeded' && (starts.get('closedclaim') ?? 0) === 1,
    ['SEC-10', 'STATUS-1', 'REC-9'],
    `the highest claim is invalid, but a valid end.1.json closes it: the claim counts by its name and the job is queued, so it must run once; claims ${s8?.claims.join(',')}, receipt ${s8?.receipt?.outcome ?? 'none'}, ${starts.get('closedclaim') ?? 0} starts`,
    evidence,
  );
}

async function damagedLayoutCase(ctx: CaseContext): Promise<void> {
  const f = await freshQueue(ctx, 'layout');
  const plain = await stageJob(f.queue, { argv: logged(f.log, 'plain'), cwd: f.work });
  const copy = await ctx.subdir('layout/copy');
  await rename(path.join(f.root, 'lanes'), path.join(copy, 'lanes'));
  await symlink(path.join(copy, 'lanes'), path.join(f.root, 'lanes'));
  const produced = await ctx.produce(f.root, { argv: logged(f.log, 'produced'), cwd: f.work });
  const run = await ctx.role('consume', { queue: f.root });
  const starts = countBy(await readStarts(f.log));
  const snapshot = await ctx.snapshot(f.root);
  const evidence = [describeExit(produced.result), describeExit(run), ...listing(snapshot, new Set([plain.id]))];
  ctx.check(produced.id === undefined && produced.result.code !== 0 && produced.result.code !== 3, ['LAYOUT-10', 'SEC-2'], `produce must refuse a queue whose lanes/ is a symlink, even for a job without a lane (exit non-zero, not 3); ${describeExit(produced.result)}`, evidence);
  ctx.check((starts.get('plain') ?? 0) === 0 && snapshot.jobs.get(plain.id)?.claims.length === 0, ['LAYOUT-10', 'SEC-2'], `consume must refuse a queue whose lanes/ is a symlink: no job runs, not even one without a lane; ${starts.get('plain') ?? 0} starts`, evidence);
}

export const securityCases: ConformanceCase[] = [
  {
    name: 'hostile/job-entries',
    clauses: union(JOB_LEVEL.map((s) => s.clauses)),
    level: 'consumer',
    strength: 'MUST',
    run: async (ctx) => {
      const root = process.geteuid?.() === 0;
      const scenarios = JOB_LEVEL.filter((s) => root || s.root !== true);
      if (scenarios.length < JOB_LEVEL.length) ctx.note('foreign-uid-spec needs root and was left out');
      ctx.note(`${scenarios.length} hostile entries, one job each: ${scenarios.map((s) => s.name).join(', ')}`);
      await runHostile(ctx, scenarios);
    },
  },
  ...SCENARIOS.filter((s) => s.queueLevel === true).map((scenario) => ({
    name: `hostile/${scenario.name}`,
    clauses: scenario.clauses,
    level: 'consumer' as const,
    strength: 'MUST' as const,
    run: (ctx: CaseContext) => runHostile(ctx, [scenario]),
  })),
  { name: 'hostile/hazard-table', clauses: ['SEC-10', 'REC-9', 'EXEC-7', 'SEC-9', 'STATUS-1', 'CLAIM-6', 'LEASE-3', 'READY-1', 'SEC-5', 'RETRY-1', 'RETRY-2', 'RECOV-2'], level: 'consumer', strength: 'MUST', run: hazardTableCase },
  { name: 'hostile/damaged-layout', clauses: ['LAYOUT-10', 'SEC-2'], level: 'consumer', strength: 'MUST', run: damagedLayoutCase },
];
