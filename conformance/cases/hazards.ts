/**
 * What a reader does with what it did not expect (SEC-10, REC-9, LAYOUT-10,
 * CLAIM-11) and the bounds 1.1 set where 1.0 had none (EXEC-12, ENQ-7,
 * DEDUPE-3):
 *
 * - hostile/hazard-table: one job per cell of SEC-10's table where 1.0
 *   implementations differed, each with the one action 1.1 decided;
 * - hostile/damaged-layout (LAYOUT-10): a queue whose lanes/ is a symlink is
 *   refused by every operation, not served in part;
 * - consumer/unclaimed-features (CLAIM-11): a consumer never claims a job
 *   that needs a feature it does not claim;
 * - consumer/escaped-output (EXEC-12, EXEC-16): a process that left the
 *   group keeps the output pipes open; the receipt comes DRAIN_LIMIT later;
 * - producer/spec-over-record-max (ENQ-7): a valid request whose spec would
 *   exceed RECORD_MAX is refused with nothing written;
 * - producer/dedupe-foreign-stage (DEDUPE-3): a foreign producer's hold of
 *   a job still in tmp/ counts for DEDUPE_STAGE_MAX + LEASE_SKEW, no longer;
 * - producer/dedupe-stage-bound (DEDUPE-5): a producer stopped at its hold's
 *   link for longer than DEDUPE_STAGE_MAX publishes nothing afterwards.
 */
import { chmod, link, readdir, readFile, rename, symlink, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DEDUPE_STAGE_MAX, DRAIN_LIMIT, LEASE_MIN, LEASE_SKEW, PROTOCOL_VERSION, RECORD_MAX } from '../../src/base/constants.ts';
import { ensurePrivateDir } from '../../src/fs/safefs.ts';
import { selfIdentity } from '../../src/model/identity.ts';
import { keyHash } from '../../src/model/layout.ts';
import type { HoldRecord } from '../../src/records/codec.ts';
import { serializeRecord } from '../../src/records/codec.ts';
import { type CaseContext, type ConformanceCase, countBy, readStarts } from '../runner/case.ts';
import { claimRecord, deadOwner, foreignOwner, stateRecord } from '../runner/fixtures.ts';
import { entriesOf, listing } from '../runner/inspect.ts';
import { describeExit, type ProcessResult } from '../runner/process.ts';
import { newJobId } from '../../src/producer/id.ts';
import { plantBytes, plantRecord, reopen, stageJob, type Staged } from '../runner/stage.ts';
import { logged, sh } from './jobs.ts';
import { writeRequest } from '../runner/stage.ts';
import { JOB_ID_PATTERN } from '../../src/records/names.ts';
import { needsInjector } from '../runner/pause.ts';

/** Scheduling tolerance on a loaded 2-core machine, added to every bound the spec states. */
const TOLERANCE_MS = 3000;

async function fresh(ctx: CaseContext, label: string): Promise<{ root: string; work: string; log: string; queue: Awaited<ReturnType<typeof reopen>> }> {
  const root = await ctx.newQueue(label);
  const work = await ctx.subdir(`${label}/work`);
  return { root, work, log: path.join(work, 'starts.log'), queue: await reopen(root) };
}

async function recoverAndConsume(ctx: CaseContext, root: string): Promise<ProcessResult[]> {
  const runs: ProcessResult[] = [];
  if (ctx.impl.roles.recover !== undefined) runs.push(await ctx.role('recover', { queue: root }));
  runs.push(await ctx.role('consume', { queue: root }));
  return runs;
}

async function hazardTableCase(ctx: CaseContext): Promise<void> {
  const f = await fresh(ctx, 'hazards');
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

  const runs = await recoverAndConsume(ctx, f.root);
  const snapshot = await ctx.snapshot(f.root);
  const starts = countBy(await readStarts(f.log));
  const all = new Set([linked.id, ended.id, cancelled.id, unknown.id, byName.id, wide.id]);
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
}

async function damagedLayoutCase(ctx: CaseContext): Promise<void> {
  const f = await fresh(ctx, 'layout');
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

async function unclaimedFeaturesCase(ctx: CaseContext): Promise<void> {
  const f = await fresh(ctx, 'unclaimed');
  const claimed = ctx.impl.profile.features;
  const jobs: { feature: string; job: Staged }[] = [];
  if (!claimed.has('payload')) jobs.push({ feature: 'payload', job: await stageJob(f.queue, { handler: 'conformance.h', payload: { n: 1 }, cwd: f.work }) });
  if (!claimed.has('lanes')) jobs.push({ feature: 'lanes', job: await stageJob(f.queue, { argv: logged(f.log, 'lane'), cwd: f.work, lane: 'a lane' }) });
  if (!claimed.has('preemption') && claimed.has('lanes')) {
    jobs.push({ feature: 'preemption', job: await stageJob(f.queue, { argv: logged(f.log, 'preemptible'), cwd: f.work, lane: 'p lane', preemptible: true }) });
  }
  const plain = await stageJob(f.queue, { argv: logged(f.log, 'plain'), cwd: f.work });
  const run = await ctx.consumeOk(f.root, ['CLAIM-11']);
  const snapshot = await ctx.snapshot(f.root);
  const evidence = [describeExit(run), ...listing(snapshot, new Set([plain.id, ...jobs.map((j) => j.job.id)]))];
  for (const { feature, job } of jobs) {
    const seen = snapshot.jobs.get(job.id);
    ctx.check((seen?.claims.length ?? 0) === 0, ['CLAIM-11', 'MANIFEST-3'], `${ctx.impl.name} does not claim the ${feature} feature, so it must never claim a job that needs it (leave it for another consumer); it has claims ${seen?.claims.join(',')}`, evidence);
  }
  ctx.check(snapshot.jobs.get(plain.id)?.receipt?.outcome === 'succeeded', ['CLAIM-2', 'CLAIM-11'], 'the plain job must still run', evidence);
}

async function escapedOutputCase(ctx: CaseContext): Promise<void> {
  const f = await fresh(ctx, 'escaped');
  const pidFile = path.join(f.work, 'escaped.pid');
  // coreutils timeout puts its child in a group of its own: it has left the job's group, stdout still open.
  const job = await stageJob(f.queue, {
    argv: sh(`timeout 0 sleep 30 & echo "$!" > "$1"; printf 'end %s\\n' "$(date +%s%3N)" >> "$2"; echo out`, pidFile, f.log),
    cwd: f.work,
  });
  try {
    const run = await ctx.consumeOk(f.root, ['EXEC-12']);
    const snapshot = await ctx.snapshot(f.root);
    const receipt = snapshot.jobs.get(job.id)?.receipt;
    const lines = (await readFile(f.log, 'utf8').catch(() => '')).split('\n');
    const end = Number(lines.find((l) => l.startsWith('end '))?.slice(4));
    const late = receipt === undefined ? Number.NaN : receipt.finished_ms - end;
    const evidence = [describeExit(run), `the command ended at ${end}; receipt at ${receipt?.finished_ms ?? 'none'}`, ...listing(snapshot, new Set([job.id]))];
    ctx.check(
      receipt !== undefined && Number.isFinite(late) && late <= DRAIN_LIMIT + TOLERANCE_MS,
      ['EXEC-12', 'EXEC-16', 'EXEC-11'],
      `a process that left the group holds the output pipes: the owner waits at most DRAIN_LIMIT (${DRAIN_LIMIT} ms, + ${TOLERANCE_MS} ms tolerance) after the group is gone; the receipt came ${late} ms after the command ended`,
      evidence,
    );
    ctx.check(receipt?.stdout?.bytes_total === null, ['EXEC-12', 'RCPT-5'], `when the owner stops waiting for a pipe, bytes_total is null (unknown); got ${JSON.stringify(receipt?.stdout)}`, evidence);
  } finally {
    const pid = Number((await readFile(pidFile, 'utf8').catch(() => '')).trim());
    if (pid > 0) {
      for (const target of [-pid, pid]) {
        try {
          process.kill(target, 'SIGKILL');
        } catch {
          // gone
        }
      }
    }
  }
}

async function specOverRecordMaxCase(ctx: CaseContext): Promise<void> {
  const f = await fresh(ctx, 'recordmax');
  // Every argument within its own bound (131072 bytes), the spec past RECORD_MAX.
  const big = 'x'.repeat(131_072);
  const argv: [string, ...string[]] = ['true', ...Array.from({ length: Math.ceil(RECORD_MAX / big.length) + 1 }, () => big)];
  const produced = await ctx.produce(f.root, { argv, cwd: f.work });
  const jobs = (await entriesOf(path.join(f.root, 'jobs'))).map((e) => e.name);
  const tmp = (await entriesOf(path.join(f.root, 'tmp'))).filter((e) => !e.name.startsWith('.')).map((e) => e.name);
  const ready = (await entriesOf(path.join(f.root, 'ready'))).map((e) => e.name);
  ctx.check(
    produced.id === undefined && produced.result.code !== 0 && jobs.length === 0 && tmp.length === 0 && ready.length === 0,
    ['ENQ-7', 'REC-2', 'ENQ-1'],
    `a request whose spec would be larger than RECORD_MAX (${RECORD_MAX}) must be refused before anything is written; ${describeExit(produced.result)}; jobs/ ${jobs.join(' ') || '-'}, tmp/ ${tmp.join(' ') || '-'}, ready/ ${ready.join(' ') || '-'}`,
  );
}

async function dedupeForeignStageCase(ctx: CaseContext): Promise<void> {
  const f = await fresh(ctx, 'stage');
  const foreign = foreignOwner(await selfIdentity());
  const plantStaged = async (key: string, ageMs: number): Promise<string> => {
    const id = newJobId();
    await ensurePrivateDir(f.queue.paths.staging(id), f.queue.fsOptions);
    const dir = path.join(f.root, 'dedupe', keyHash(key));
    await ensurePrivateDir(dir, f.queue.fsOptions);
    const hold: HoldRecord = { fsjob: PROTOCOL_VERSION, type: 'hold', kind: 'dedupe', key, job_id: id, gen: null, owner: foreign, created_ms: Date.now() - ageMs };
    await plantRecord(f.queue, dir, '1.json', 'hold', hold);
    return id;
  };
  // Inside DEDUPE_STAGE_MAX + LEASE_SKEW (65 s) but past a 30 s lease + GUARDIAN_LIMIT + LEASE_SKEW: held.
  const young = await plantStaged('young key', 50_000);
  // Past DEDUPE_STAGE_MAX + LEASE_SKEW (+ tolerance): no longer held, although tmp/<id>/ is still there.
  const old = await plantStaged('old key', DEDUPE_STAGE_MAX + LEASE_SKEW + TOLERANCE_MS + 5_000);
  const a = await ctx.produce(f.root, { argv: logged(f.log, 'a'), cwd: f.work, dedupe: 'young key' });
  const b = await ctx.produce(f.root, { argv: logged(f.log, 'b'), cwd: f.work, dedupe: 'old key' });
  ctx.check(a.result.code === 3, ['DEDUPE-3', 'DEDUPE-1'], `a foreign producer's hold of a job still staged (tmp/${young}/) taken 50 s ago counts until DEDUPE_STAGE_MAX + LEASE_SKEW: the enqueue must exit 3; ${describeExit(a.result)}`);
  ctx.check(b.result.code === 0 && b.id !== undefined, ['DEDUPE-3', 'DEDUPE-2'], `a foreign producer's hold of a job staged (tmp/${old}/) more than DEDUPE_STAGE_MAX + LEASE_SKEW ago no longer counts: the enqueue is accepted; ${describeExit(b.result)}`);
}

/**
 * DEDUPE-5 needs DEDUPE_STAGE_MAX to pass between the producer's clock
 * reading for its hold and its publishing rename. Nothing outside the
 * producer can move its monotonic clock, so the case stops it (SIGSTOP, the
 * interposer's pause point) just before it links the hold, after it read the
 * clock for the hold's created_ms, and waits the spec's number out: one
 * minute of sleep, no CPU; the case starts first (heavy).
 */
const STOPPED_MS = DEDUPE_STAGE_MAX + 1000;

async function dedupeStageBoundCase(ctx: CaseContext): Promise<void> {
  await needsInjector(ctx, 'to stop the producer at its dedupe hold');
  const f = await fresh(ctx, 'bound');
  const request = await writeRequest(path.join(ctx.dir, 'requests'), 'late', { argv: logged(f.log, 'late'), cwd: f.work, dedupe: 'late key' });
  // The role's own time limit runs while it is stopped: extend it by the stop.
  const run = await ctx.startRolePaused('produce', { queue: f.root, request }, { op: 'link', path: 'dedupe/*/*' }, { timeoutMs: ctx.impl.timeoutMs + STOPPED_MS });
  const call = await run.paused;
  if (call === undefined) {
    const result = await run.result;
    ctx.fail(['DEDUPE-2'], `produce of a request with a dedupe key ended without linking a hold under dedupe/ (exit ${result.exitCode}); the case could not stop it there`, listing(await ctx.snapshot(f.root)));
    return;
  }
  const staged = (await readdir(path.join(f.root, 'tmp'))).filter((name) => JOB_ID_PATTERN.test(name));
  await new Promise((resolve) => setTimeout(resolve, STOPPED_MS));
  run.resume();
  const result = await run.result;
  const snapshot = await ctx.snapshot(f.root);
  const published = [...snapshot.jobs.keys()];
  const evidence = [`produce: ${result.timedOut ? 'killed after its time limit; ' : ''}exit ${result.exitCode}${result.signal === null ? '' : ` signal ${result.signal}`}; stderr: ${result.stderr.trim().split('\n').slice(-2).join(' | ').slice(0, 300)}`, ...listing(snapshot)];
  if (!ctx.check(published.length === 0 && result.exitCode !== 0 && result.exitCode !== null, ['DEDUPE-5', 'DEDUPE-3'], `a producer stopped ${STOPPED_MS / 1000} s at the link of its dedupe hold (${call.path2 ?? call.path}) is past DEDUPE_STAGE_MAX when it resumes: it must refuse the job and publish nothing; published ${published.length === 0 ? 'nothing' : published.join(' ')}, exit ${result.exitCode}`, evidence)) return;
  const left = snapshot.tmp.map((e) => e.name).filter((name) => staged.includes(name));
  const ready = snapshot.ready.map((e) => e.name).filter((name) => staged.some((id) => name.endsWith(id)));
  ctx.check(left.length === 0 && ready.length === 0, ['ENQ-6', 'DEDUPE-5'], `the refused job's staging and ready entry must be removed (ENQ-6); left: ${[...left.map((n) => `tmp/${n}`), ...ready.map((n) => `ready/${n}`)].join(' ')}`, evidence);
}

export const hazardCases: ConformanceCase[] = [
  { name: 'hostile/hazard-table', clauses: ['SEC-10', 'REC-9', 'EXEC-7', 'SEC-9', 'STATUS-1', 'CLAIM-6', 'LEASE-3', 'READY-1', 'SEC-5'], level: 'consumer', strength: 'MUST', run: hazardTableCase },
  { name: 'hostile/damaged-layout', clauses: ['LAYOUT-10', 'SEC-2'], level: 'consumer', strength: 'MUST', run: damagedLayoutCase },
  { name: 'consumer/unclaimed-features', clauses: ['CLAIM-11', 'MANIFEST-3', 'CLAIM-2'], level: 'consumer', strength: 'MUST', unclaimed: ['payload', 'lanes', 'preemption'], run: unclaimedFeaturesCase },
  { name: 'consumer/escaped-output', clauses: ['EXEC-12', 'EXEC-16', 'EXEC-11', 'RCPT-5'], level: 'consumer', strength: 'MUST', run: escapedOutputCase },
  { name: 'producer/spec-over-record-max', clauses: ['ENQ-7', 'REC-2', 'ENQ-1'], level: 'producer', strength: 'MUST', run: specOverRecordMaxCase },
  { name: 'producer/dedupe-foreign-stage', clauses: ['DEDUPE-3', 'DEDUPE-1', 'DEDUPE-2'], level: 'producer', strength: 'MUST', features: ['dedupe'], run: dedupeForeignStageCase },
  { name: 'producer/dedupe-stage-bound', clauses: ['DEDUPE-5', 'DEDUPE-3', 'DEDUPE-2', 'ENQ-6'], level: 'producer', strength: 'MUST', features: ['dedupe'], heavy: true, run: dedupeStageBoundCase },
];
