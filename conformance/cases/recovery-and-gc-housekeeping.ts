/**
 * consumer/housekeeping: what recover and consume leave of a queue besides
 * receipts, on a planted state whose timing is set by file mtimes (never by
 * sleeping):
 *
 * - a job without a ready entry gets one from recover and is run by
 *   consume (READY-4: a crash can lose an entry that was never fsynced);
 * - temporary names and tmp/ entries younger than TEMP_MAX_AGE are left
 *   alone; older ones may go, but a stale symlink in tmp/ is never followed
 *   (TEMP-1, SEC-2);
 * - a job without a receipt is never removed, however old its directory
 *   looks (GC-1);
 * - once the jobs finished: no ready entry of a finished job is left by the
 *   consumer that published its receipt (READY-2); every entry the consumer
 *   wrote is 0700/0600 and no temporary name survives (SEC-5, PUB-6, PUB-3);
 *   job directories hold only the names spec/layout.md lists (LAYOUT-5), and
 *   worker registrations are named as LAYOUT-9 says.
 */
import { mkdir, readFile, symlink, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { TEMP_MAX_AGE } from '../../src/base/constants.ts';
import { classifyJobEntry, readyEntryName } from '../../src/model/layout.ts';
import { type CaseContext, type ConformanceCase, countBy, readStarts } from '../runner/case.ts';
import { hygieneFailures } from '../runner/hygiene.ts';
import { entriesOf, listing } from '../runner/inspect.ts';
import { describeExit, type ProcessResult } from '../runner/process.ts';
import { newJobId } from '../../src/producer/id.ts';
import { fingerprint, reopen, stageJob } from '../runner/stage.ts';
import { logged } from './jobs.ts';

/** Two hours before now: older than TEMP_MAX_AGE (one hour) with a margin no clock step reaches. */
const STALE_S = (Date.now() - 2 * TEMP_MAX_AGE) / 1000;

async function age(file: string): Promise<void> {
  await utimes(file, STALE_S, STALE_S);
}

async function housekeeping(ctx: CaseContext): Promise<void> {
  const root = await ctx.newQueue('housekeeping');
  const work = await ctx.subdir('housekeeping/work');
  const outside = await ctx.subdir('outside');
  const queue = await reopen(root);
  const log = path.join(work, 'starts.log');
  const job = (tag: string, extra: Record<string, unknown> = {}, options: { ready?: boolean } = {}) => stageJob(queue, { argv: logged(log, tag), cwd: work, ...extra }, options);

  const unindexed = await job('unindexed', {}, { ready: false });
  const old = await job('old');
  for (const name of ['spec.json', '']) await age(path.join(old.dir, name));
  const busy = await job('busy', { argv: logged(log, 'busy', 'echo out; echo err >&2; exit 1'), max_attempts: 2, lane: 'housekeeping lane' });
  // Fresh temporary names everywhere a writer may leave one, and a fresh staging directory.
  const fresh = [path.join(root, '.fresh'), path.join(root, 'ready', '.fresh'), path.join(busy.dir, '.fresh'), path.join(root, 'tmp', '.fresh')];
  for (const file of fresh) await writeFile(file, 'in progress\n', { mode: 0o600 });
  const staging = path.join(root, 'tmp', newJobId());
  await mkdir(staging, { mode: 0o700 });
  await writeFile(path.join(staging, 'spec.json'), '{}\n', { mode: 0o600 });
  fresh.push(path.join(staging, 'spec.json'));
  // Stale ones, which may be removed: a file, and a symlink out of the queue that must not be followed.
  const staleFile = path.join(busy.dir, '.stale');
  await writeFile(staleFile, 'abandoned\n', { mode: 0o600 });
  await age(staleFile);
  const target = path.join(outside, 'kept');
  await mkdir(target, { mode: 0o700 });
  await writeFile(path.join(target, 'file'), 'outside the queue\n', { mode: 0o600 });
  const staleLink = path.join(root, 'tmp', '.stale-link');
  await symlink(target, staleLink);
  const outsideBefore = await fingerprint(target);
  const planted = new Set([...fresh, staleFile, staleLink].map((file) => path.relative(root, file)));

  const runs: ProcessResult[] = [];
  const evidence = async (): Promise<string[]> => [...runs.map(describeExit), ...listing(await ctx.snapshot(root))];
  if (ctx.impl.roles.recover !== undefined) {
    runs.push(await ctx.role('recover', { queue: root }));
    const entry = readyEntryName(unindexed.spec.priority, unindexed.id);
    const rebuilt = (await entriesOf(path.join(root, 'ready'))).some((e) => e.name === entry);
    ctx.check(rebuilt, ['READY-4', 'RECOV-3'], `recover rebuilds missing ready entries from jobs/: jobs/${unindexed.id} has no receipt, so ready/${entry} must exist after recover`, await evidence());
  }
  const oldThere = (await entriesOf(path.join(root, 'jobs'))).some((e) => e.name === old.id);
  ctx.check(oldThere, ['GC-1'], `a job without a receipt is never removed, however old its directory: jobs/${old.id} (mtime two hours ago) is gone`, await evidence());
  runs.push(await ctx.role('consume', { queue: root }));
  const snapshot = await ctx.snapshot(root);
  const after = [...runs.map(describeExit), ...listing(snapshot)];

  const gone = [];
  for (const file of fresh) {
    const text = await readFile(file, 'utf8').catch(() => undefined);
    if (text === undefined) gone.push(path.relative(root, file));
  }
  ctx.check(gone.length === 0, ['TEMP-1'], `temporary names and tmp/ entries younger than TEMP_MAX_AGE are in progress and must not be removed; removed: ${gone.join(' ')}`, after);
  const outsideAfter = await fingerprint(target);
  ctx.check(outsideAfter === outsideBefore, ['SEC-2', 'TEMP-1'], `removing the stale symlink tmp/.stale-link must not follow it: the directory it points to outside the queue changed`, [...after, `now: ${outsideAfter.split('\n').join(' | ')}`]);
  const starts = countBy(await readStarts(log));
  ctx.check((starts.get('unindexed') ?? 0) === 1, ['READY-4'], `a consumer rebuilds missing ready entries when it starts: the job without one (jobs/${unindexed.id}) must run once; it started ${starts.get('unindexed') ?? 0} times`, after);
  ctx.check(snapshot.jobs.get(old.id)?.receipt !== undefined, ['GC-1', 'I3'], `the job with an old directory must have been run to its receipt (jobs/${old.id})`, after);

  const finished = [...snapshot.jobs.values()].filter((j) => j.receipt !== undefined).map((j) => j.id);
  const leftover = snapshot.ready.filter((e) => finished.some((id) => e.name.endsWith(`-${id}`)));
  ctx.check(leftover.length === 0, ['READY-2'], `whoever publishes a receipt removes the job's ready entry afterwards; entries of finished jobs left: ${leftover.map((e) => e.name).join(' ')}`, after);
  for (const failure of await hygieneFailures(root, 'after recover and consume', (rel) => planted.has(rel))) ctx.failures.push({ ...failure, evidence: after });
  const unknown: string[] = [];
  for (const j of snapshot.jobs.values()) {
    for (const entry of j.entries) {
      const kind = classifyJobEntry(entry.name).kind;
      if (kind === 'unknown' && !planted.has(`jobs/${j.id}/${entry.name}`)) unknown.push(`jobs/${j.id}/${entry.name}`);
    }
  }
  const workers = (await entriesOf(path.join(root, 'workers'))).filter((e) => !e.name.startsWith('.') && !/^[0-9a-f]{16}\.json$/.test(e.name));
  ctx.check(workers.length === 0, ['LAYOUT-9', 'WORKER-1'], `worker registrations are named <16 lowercase hex digits>.json; written: ${workers.map((e) => `workers/${e.name}`).join(' ')}`, after);
  ctx.check(unknown.length === 0, ['LAYOUT-5', 'LAYOUT-6'], `a job directory holds only the names of spec/layout.md (and temporary names); written: ${unknown.join(' ')}`, after);
}

export const housekeepingCases: ConformanceCase[] = [
  {
    name: 'consumer/housekeeping',
    clauses: ['READY-2', 'READY-4', 'TEMP-1', 'GC-1', 'SEC-2', 'SEC-5', 'PUB-3', 'PUB-6', 'LAYOUT-5', 'LAYOUT-9', 'RECOV-3'],
    level: 'consumer',
    strength: 'MUST',
    run: housekeeping,
  },
];
