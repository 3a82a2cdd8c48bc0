/**
 * The cases of spec/gates.md: jobs that run after others (AFTER-*), held
 * jobs (HOLD-*) and the gated directory that keeps both from every reader
 * that cannot see their gates (GATE-*).
 *
 * Consumer cases stage their jobs themselves (runner/stage.ts), gated as
 * GATE-1 says, so that the starting state is the same for every
 * implementation; the producer cases run the producer's own produce,
 * release and cancel roles. Every overlap is forced: a dependency that must
 * still run while its dependent waits is a probe that runs until the case
 * creates its gate file.
 */
import { utimes, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { TEMP_MAX_AGE } from '../../src/base/constants.ts';
import { readyEntryName } from '../../src/model/layout.ts';
import { newJobId } from '../../src/producer/id.ts';
import type { JobRequest } from '../../src/records/codec.ts';
import { type CaseContext, type ConformanceCase, countBy, readStarts } from '../runner/case.ts';
import { checkInvariants, listing, type QueueSnapshot } from '../runner/inspect.ts';
import { describeExit } from '../runner/process.ts';
import { freshQueue, plantRecord, reopen, stageJob, writeRequest } from '../runner/stage.ts';
import { logged } from './jobs.ts';
import { groupLives, killGroupNow, probe, readProbeLog, waitFor } from './probes.ts';
import { consumerExit } from './running-job.ts';

const FINISHED_NEVER_CLAIMED = (snapshot: QueueSnapshot, id: string): boolean => (snapshot.jobs.get(id)?.execs.length ?? 0) === 0;

/** Where a job's directory is now, by its name in jobs/ (GATE-1). */
function placeOf(root: string, id: string): 'open' | 'gated' | 'missing' {
  if (existsSync(path.join(root, 'jobs', id))) return 'open';
  return existsSync(path.join(root, 'jobs', `${id}.gated`)) ? 'gated' : 'missing';
}

/**
 * AFTER-3: B runs after A succeeded, C after A finished. While A runs (a
 * probe held by its gate file) neither may start, and a drain must end
 * (nothing it can make progress on); once A succeeded both run, after it.
 */
async function afterCase(ctx: CaseContext): Promise<void> {
  const f = await freshQueue(ctx, 'after');
  const gate = path.join(f.work, 'gate');
  const a = await stageJob(f.queue, { argv: probe(f.log, 'a', { gate }), cwd: f.work });
  const b = await stageJob(f.queue, { argv: logged(f.log, 'b'), cwd: f.work, after: [{ job_id: a.id, when: 'succeeded' }] });
  const c = await stageJob(f.queue, { argv: logged(f.log, 'c'), cwd: f.work, after: [{ job_id: a.id, when: 'finished' }] });
  const first = ctx.startRole('consume', { queue: f.root });
  let pgid: number | undefined;
  try {
    const started = await waitFor(async () => (pgid = (await readProbeLog(f.log)).pid('a')) !== undefined, 60_000);
    if (!started) {
      ctx.fail(['MANIFEST-1'], 'job A (no dependency) did not start', listing(await ctx.snapshot(f.root)));
      return;
    }
    // A second consumer drains while A runs: B and C wait for it.
    const second = await ctx.role('consume', { queue: f.root });
    const during = await ctx.snapshot(f.root);
    const starts = countBy(await readStarts(f.log));
    const evidence = [describeExit(second), ...listing(during, new Set([a.id, b.id, c.id]))];
    for (const [tag, job] of [['b', b], ['c', c]] as const) {
      const ran = (starts.get(tag) ?? 0) > 0 || (during.jobs.get(job.id)?.execs.length ?? 0) > 0;
      ctx.check(!ran, ['AFTER-3', 'GATE-3'], `job ${tag.toUpperCase()} runs after job A, which still runs; it started anyway`, evidence);
      ctx.check((during.jobs.get(job.id)?.claims.length ?? 0) === 0 || !during.jobs.get(job.id)?.gated, ['GATE-2'], `job ${tag.toUpperCase()} was claimed while gated: a gated job is never claimed`, evidence);
    }
    ctx.check(second.code === 0 && !second.timedOut, ['MANIFEST-4', 'AFTER-4'], 'a drain ends once nothing it can make progress on remains: jobs waiting for a dependency another consumer runs are not its to finish', evidence);
    await writeFile(gate, '');
    await consumerExit(ctx, first, ['AFTER-4']);
    const last = await ctx.role('consume', { queue: f.root });
    const snapshot = await ctx.snapshot(f.root);
    const lines = (await readProbeLog(f.log)).lines;
    const after = [describeExit(last), ...lines.map((l) => `log: ${l}`), ...listing(snapshot, new Set([a.id, b.id, c.id]))];
    const doneA = lines.indexOf('done a');
    for (const [tag, job] of [['b', b], ['c', c]] as const) {
      ctx.check(snapshot.jobs.get(job.id)?.receipt?.outcome === 'succeeded', ['AFTER-4', 'GATE-3', 'AFTER-1'], `job ${tag.toUpperCase()} must run once A succeeded: a consumer opens its gate (AFTER-4); receipt ${snapshot.jobs.get(job.id)?.receipt?.outcome ?? 'none'}`, after);
      const start = lines.indexOf(`start ${tag}`);
      if (start >= 0) ctx.check(doneA >= 0 && start > doneA, ['AFTER-3'], `job ${tag.toUpperCase()} must start only after job A ended`, after);
    }
    for (const failure of await checkInvariants(snapshot, { accepted: [a.id, b.id, c.id], starts: countBy(await readStarts(f.log)), requireReceipts: true })) ctx.failures.push(failure);
  } finally {
    first.kill();
    if (pgid !== undefined && groupLives(pgid)) killGroupNow(pgid);
  }
}

/**
 * AFTER-3 when a dependency can never be satisfied: A fails. B (after A
 * succeeded) must end cancelled without running, its cancel record naming
 * A; D (after B succeeded) likewise, in turn; C (after A finished) runs. A
 * dependency that exists under neither name satisfies `finished` only.
 */
async function afterFailedCase(ctx: CaseContext): Promise<void> {
  const f = await freshQueue(ctx, 'after-failed');
  const a = await stageJob(f.queue, { argv: logged(f.log, 'a', 'exit 3'), cwd: f.work });
  const b = await stageJob(f.queue, { argv: logged(f.log, 'b'), cwd: f.work, after: [{ job_id: a.id, when: 'succeeded' }] });
  const c = await stageJob(f.queue, { argv: logged(f.log, 'c'), cwd: f.work, after: [{ job_id: a.id, when: 'finished' }] });
  const d = await stageJob(f.queue, { argv: logged(f.log, 'd'), cwd: f.work, after: [{ job_id: b.id, when: 'succeeded' }] });
  const gone = newJobId();
  const x = await stageJob(f.queue, { argv: logged(f.log, 'x'), cwd: f.work, after: [{ job_id: gone, when: 'succeeded' }] });
  const y = await stageJob(f.queue, { argv: logged(f.log, 'y'), cwd: f.work, after: [{ job_id: gone, when: 'finished' }] });
  const run = await ctx.role('consume', { queue: f.root });
  const snapshot = await ctx.snapshot(f.root);
  const starts = countBy(await readStarts(f.log));
  const evidence = [describeExit(run), ...listing(snapshot)];
  for (const [tag, job, why] of [['b', b, 'A failed'], ['d', d, 'B was cancelled'], ['x', x, 'its dependency exists under neither name, so its outcome is gone']] as const) {
    const receipt = snapshot.jobs.get(job.id)?.receipt;
    ctx.check(
      receipt?.outcome === 'cancelled' && receipt.exit_code === 130 && (starts.get(tag) ?? 0) === 0 && FINISHED_NEVER_CLAIMED(snapshot, job.id),
      ['AFTER-3', 'AFTER-1'],
      `job ${tag.toUpperCase()} runs only after a success that can never come (${why}): it must end cancelled (exit code 130) without running; got ${receipt === undefined ? 'no receipt' : `${receipt.outcome} (${receipt.exit_code})`} after ${starts.get(tag) ?? 0} starts`,
      evidence,
    );
    ctx.check(snapshot.jobs.get(job.id)?.cancel === true || snapshot.jobs.get(job.id)?.cancelForce === true, ['AFTER-3', 'CANCEL-1'], `job ${tag.toUpperCase()}'s end must rest on a cancel record in its directory (AFTER-3), which a 1.1 claimer decides on too`, evidence);
  }
  for (const [tag, job] of [['c', c], ['y', y]] as const) {
    ctx.check(snapshot.jobs.get(job.id)?.receipt?.outcome === 'succeeded' && starts.get(tag) === 1, ['AFTER-1'], `job ${tag.toUpperCase()} runs after its dependency finished, whatever its outcome (a dependency under neither name was retired after it finished): it must run once; receipt ${snapshot.jobs.get(job.id)?.receipt?.outcome ?? 'none'}`, evidence);
  }
  ctx.check(run.code === 0 && !run.timedOut, ['MANIFEST-4'], 'consume must finish the queue', evidence);
  for (const failure of await checkInvariants(snapshot, { accepted: [a.id, b.id, c.id, d.id, x.id, y.id], starts, requireReceipts: true })) ctx.failures.push(failure);
}

/**
 * HOLD-1: a held job is not claimed, and a drain ends beside it (it waits
 * for a release, not for a consumer); once release.json exists it runs. A
 * held job that is released while its dependency runs waits for that too.
 */
async function heldCase(ctx: CaseContext): Promise<void> {
  const f = await freshQueue(ctx, 'held');
  const held = await stageJob(f.queue, { argv: logged(f.log, 'held'), cwd: f.work, hold: true, priority: 5 });
  const free = await stageJob(f.queue, { argv: logged(f.log, 'free'), cwd: f.work });
  const first = await ctx.role('consume', { queue: f.root });
  let snapshot = await ctx.snapshot(f.root);
  let starts = countBy(await readStarts(f.log));
  const evidence = [describeExit(first), ...listing(snapshot)];
  ctx.check((starts.get('held') ?? 0) === 0 && (snapshot.jobs.get(held.id)?.claims.length ?? 0) === 0, ['HOLD-1', 'GATE-2'], 'a held job must not be claimed or run before it is released', evidence);
  ctx.check(placeOf(f.root, held.id) === 'gated', ['HOLD-1', 'GATE-3'], `a held job's gate must stay shut: it is at jobs/<id>${placeOf(f.root, held.id) === 'open' ? ', opened' : ''}`, evidence);
  ctx.check(starts.get('free') === 1, ['CLAIM-2'], 'the free job must run beside a held one', evidence);
  ctx.check(first.code === 0 && !first.timedOut, ['MANIFEST-4'], 'consume must end when only a held job remains', evidence);
  // A release by the runner itself (release.json, HOLD-2): the consumer opens the gate (AFTER-4).
  const queue = await reopen(f.root);
  await plantRecord(queue, held.dir, 'release.json', 'release', { fsjob: '1.2', type: 'release', job_id: held.id, released_ms: Date.now(), by: held.spec.producer });
  const second = await ctx.role('consume', { queue: f.root });
  snapshot = await ctx.snapshot(f.root);
  starts = countBy(await readStarts(f.log));
  const later = [describeExit(second), ...listing(snapshot, new Set([held.id]))];
  ctx.check(snapshot.jobs.get(held.id)?.receipt?.outcome === 'succeeded' && starts.get('held') === 1, ['HOLD-1', 'AFTER-4', 'GATE-3'], `once release.json exists the held job runs (its gate is opened by the consumer); receipt ${snapshot.jobs.get(held.id)?.receipt?.outcome ?? 'none'}`, later);
  for (const failure of await checkInvariants(snapshot, { accepted: [held.id, free.id], starts, requireReceipts: true })) ctx.failures.push(failure);
}

/**
 * READY-3, READY-4, GATE-4 for every consumer (with gates or not): the
 * ready entry of a gated job is older than TEMP_MAX_AGE and names no
 * jobs/<id>: it is not stale; one that is missing is rebuilt at the
 * spec's priority. Nobody claims the gated job (GATE-2).
 */
async function gatedEntryCase(ctx: CaseContext): Promise<void> {
  const f = await freshQueue(ctx, 'gated-entry');
  const held = await stageJob(f.queue, { argv: logged(f.log, 'held'), cwd: f.work, hold: true, priority: 7 });
  const lost = await stageJob(f.queue, { argv: logged(f.log, 'lost'), cwd: f.work, hold: true, priority: -4 }, { ready: false });
  const entry = path.join(f.root, 'ready', readyEntryName(7, held.id));
  const old = (Date.now() - TEMP_MAX_AGE - 600_000) / 1000;
  await utimes(entry, old, old);
  const runs = [await ctx.role('consume', { queue: f.root })];
  if (ctx.impl.roles.recover !== undefined) runs.push(await ctx.role('recover', { queue: f.root }));
  const snapshot = await ctx.snapshot(f.root);
  const evidence = [...runs.map(describeExit), ...listing(snapshot)];
  for (const job of [held, lost]) ctx.check((snapshot.jobs.get(job.id)?.claims.length ?? 0) === 0 && placeOf(f.root, job.id) === 'gated', ['GATE-2', 'HOLD-1'], `held job ${job.id} must stay gated and unclaimed`, evidence);
  ctx.check(existsSync(entry), ['READY-3', 'GATE-4'], `the ready entry of gated job ${held.id} names no jobs/<id>, but the job is at jobs/<id>.gated: it is not stale and must stay`, evidence);
  ctx.check(existsSync(path.join(f.root, 'ready', readyEntryName(-4, lost.id))), ['READY-4', 'READY-5'], `gated job ${lost.id} had no ready entry: it must be rebuilt (at its spec's priority, -4) when a consumer starts`, evidence);
}

/**
 * GATE-1, AFTER-2: the producer publishes a job with `after` or `hold` at
 * jobs/<id>.gated (with its ready entry), refuses one naming a missing job
 * or a job twice, and publishes nothing then.
 */
async function producerGatedCase(ctx: CaseContext): Promise<void> {
  const f = await freshQueue(ctx, 'produce-gated');
  const running = await stageJob(f.queue, { argv: logged(f.log, 'dep'), cwd: f.work });
  const requests = path.join(ctx.dir, 'requests');
  const produce = async (name: string, request: JobRequest) => ctx.role('produce', { queue: f.root, request: await writeRequest(requests, name, request) });
  const cases: [string, JobRequest, string[]][] = [
    ['after', { argv: ['true'], cwd: f.work, after: [{ job_id: running.id }] }, ['GATE-1', 'AFTER-1']],
    ['hold', { argv: ['true'], cwd: f.work, hold: true }, ['GATE-1', 'HOLD-1']],
  ];
  for (const [name, request, clauses] of cases) {
    const result = await produce(name, request);
    const id = result.stdout.trim();
    const snapshot = await ctx.snapshot(f.root);
    const evidence = [describeExit(result), ...listing(snapshot)];
    if (!ctx.check(result.code === 0, ['MANIFEST-4', ...clauses], `the ${name} request must be accepted`, evidence)) continue;
    ctx.check(placeOf(f.root, id) === 'gated', [...clauses], `a job with ${name === 'after' ? 'a dependency that is not finished' : 'a hold'} must be published at jobs/<id>.gated, where no 1.1 reader looks; it is ${placeOf(f.root, id)}`, evidence);
    ctx.check(snapshot.ready.some((e) => e.name.endsWith(`-${id}`)), ['ENQ-2', 'READY-1'], 'a gated job has its ready entry too', evidence);
  }
  const refused: [string, JobRequest][] = [
    ['missing', { argv: ['true'], cwd: f.work, after: [{ job_id: newJobId() }] }],
    ['twice', { argv: ['true'], cwd: f.work, after: [{ job_id: running.id }, { job_id: running.id, when: 'finished' }] }],
  ];
  for (const [name, request] of refused) {
    const before = (await ctx.snapshot(f.root)).jobs.size;
    const result = await produce(name, request);
    const snapshot = await ctx.snapshot(f.root);
    ctx.check(result.code !== 0 && result.code !== 3 && snapshot.jobs.size === before, ['AFTER-2', 'ENQ-6'], `a request whose after names ${name === 'missing' ? 'a job that does not exist' : 'one job twice'} must be refused (not exit 3) with nothing published`, [describeExit(result), ...listing(snapshot)]);
  }
}

/**
 * HOLD-2, GATE-3: the release role publishes release.json and opens the gate
 * of a held job without dependencies; again it succeeds; a held job whose
 * dependency is not finished stays gated once released; a job never held is
 * not released.
 */
async function releaseCase(ctx: CaseContext): Promise<void> {
  const f = await freshQueue(ctx, 'release');
  const held = await stageJob(f.queue, { argv: logged(f.log, 'held'), cwd: f.work, hold: true });
  const plain = await stageJob(f.queue, { argv: logged(f.log, 'plain'), cwd: f.work });
  const blocked = await stageJob(f.queue, { argv: logged(f.log, 'blocked'), cwd: f.work, hold: true, after: [{ job_id: plain.id, when: 'succeeded' }] });
  const waiting = await ctx.role('release', { queue: f.root, id: blocked.id });
  const seen = await ctx.snapshot(f.root);
  ctx.check(waiting.code === 0 && placeOf(f.root, blocked.id) === 'gated', ['GATE-3', 'HOLD-2'], `a released job whose dependency has not finished must stay gated (its gate opens only once the dependency succeeded); release exited ${waiting.code}, the job is ${placeOf(f.root, blocked.id)}`, [describeExit(waiting), ...listing(seen)]);
  const first = await ctx.role('release', { queue: f.root, id: held.id });
  let snapshot = await ctx.snapshot(f.root);
  const evidence = [describeExit(first), ...listing(snapshot)];
  ctx.check(first.code === 0, ['HOLD-2', 'MANIFEST-4'], 'release of a held job must exit 0', evidence);
  ctx.check(snapshot.jobs.get(held.id)?.release === true, ['HOLD-2'], 'release must publish release.json in the job directory', evidence);
  ctx.check(placeOf(f.root, held.id) === 'open', ['HOLD-2', 'GATE-3'], `a released job without dependencies has its gate opened by the releaser (jobs/<id>); it is ${placeOf(f.root, held.id)}`, evidence);
  const again = await ctx.role('release', { queue: f.root, id: held.id });
  ctx.check(again.code === 0, ['HOLD-2'], 'releasing a released job succeeds (exit 0)', [describeExit(again)]);
  const unheld = await ctx.role('release', { queue: f.root, id: plain.id });
  ctx.check(unheld.code === 1, ['HOLD-2', 'MANIFEST-4'], 'release of a job that was never held exits 1', [describeExit(unheld)]);
  const missing = await ctx.role('release', { queue: f.root, id: newJobId() });
  ctx.check(missing.code !== 0 && missing.code !== 1, ['MANIFEST-4'], 'release of a job that does not exist exits non-zero, not 1', [describeExit(missing)]);
  const run = await ctx.consumeOk(f.root, ['HOLD-2']);
  snapshot = await ctx.snapshot(f.root);
  ctx.check(snapshot.jobs.get(held.id)?.receipt?.outcome === 'succeeded', ['HOLD-2', 'HOLD-1'], 'the released job then runs', [describeExit(run), ...listing(snapshot)]);
}

/** HOLD-3: a held job is cancelled in its gated directory, its gate opened, and it ends cancelled without running. */
async function cancelHeldCase(ctx: CaseContext): Promise<void> {
  const f = await freshQueue(ctx, 'cancel-held');
  const held = await stageJob(f.queue, { argv: logged(f.log, 'held'), cwd: f.work, hold: true });
  const result = await ctx.role('cancel', { queue: f.root, id: held.id });
  const run = await ctx.consumeOk(f.root, ['HOLD-3']);
  const snapshot = await ctx.snapshot(f.root);
  const starts = countBy(await readStarts(f.log));
  const evidence = [describeExit(result), describeExit(run), ...listing(snapshot)];
  ctx.check(result.code === 0, ['HOLD-3', 'CANCEL-1'], 'cancel of a held job must exit 0', evidence);
  const receipt = snapshot.jobs.get(held.id)?.receipt;
  ctx.check(receipt?.outcome === 'cancelled' && (starts.get('held') ?? 0) === 0, ['HOLD-3', 'CANCEL-2'], `a held job that is cancelled ends cancelled without running; got ${receipt?.outcome ?? 'no receipt'} after ${starts.get('held') ?? 0} starts`, evidence);
}

export const gatesCases: ConformanceCase[] = [
  { name: 'consumer/after', clauses: ['AFTER-3', 'AFTER-4', 'AFTER-1', 'GATE-2', 'GATE-3', 'MANIFEST-4'], level: 'consumer', strength: 'MUST', features: ['gates'], run: afterCase },
  { name: 'consumer/after-failed', clauses: ['AFTER-3', 'AFTER-1', 'CANCEL-1', 'MANIFEST-4'], level: 'consumer', strength: 'MUST', features: ['gates'], run: afterFailedCase },
  { name: 'consumer/held', clauses: ['HOLD-1', 'GATE-2', 'GATE-3', 'AFTER-4', 'CLAIM-2', 'MANIFEST-4'], level: 'consumer', strength: 'MUST', features: ['gates'], run: heldCase },
  { name: 'consumer/gated-entry', clauses: ['READY-3', 'READY-4', 'READY-5', 'GATE-4', 'GATE-2', 'HOLD-1'], level: 'consumer', strength: 'MUST', run: gatedEntryCase },
  { name: 'producer/gated', clauses: ['GATE-1', 'AFTER-2', 'AFTER-1', 'HOLD-1', 'ENQ-2', 'READY-1', 'ENQ-6', 'MANIFEST-4'], level: 'producer', strength: 'MUST', features: ['gates'], run: producerGatedCase },
  { name: 'producer/release', clauses: ['HOLD-2', 'HOLD-1', 'GATE-3', 'MANIFEST-4'], level: 'producer', strength: 'MUST', roles: ['release'], features: ['gates'], run: releaseCase },
  { name: 'producer/cancel-held', clauses: ['HOLD-3', 'CANCEL-1', 'CANCEL-2'], level: 'producer', strength: 'MUST', roles: ['cancel'], features: ['gates'], run: cancelHeldCase },
];

