/**
 * Consumer cases that need more than one batch: cancelling a running job,
 * lanes under two consumers, and four consumers racing over 200 jobs.
 */
import { readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { CONTROL_LATENCY } from '../../src/base/constants.ts';
import { readRecord, type JobRequest } from '../../src/records/codec.ts';
import { type CaseContext, type ConformanceCase, countBy, readStarts } from '../runner/case.ts';
import { checkInvariants, listing } from '../runner/inspect.ts';
import { describeExit, roleEnv, sleep } from '../runner/process.ts';
import { roleArgv } from '../runner/manifest.ts';
import { auditCalls } from '../runner/audit.ts';
import { runWithCrash, type CrashRunResult } from '../crash/run.ts';
import { interposerPath } from '../crash/interposer.ts';
import { reopen, stageJob } from '../runner/stage.ts';
import { logged } from './jobs.ts';

/** Polls until `test` holds or `ms` passed; resolves to whether it held. */
async function waitFor(test: () => Promise<boolean>, ms: number, every = 50): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await test()) return true;
    if (Date.now() > deadline) return false;
    await sleep(every);
  }
}

async function exists(file: string): Promise<boolean> {
  return readFile(file).then(
    () => true,
    () => false,
  );
}

/** Slack for a loaded machine on top of the spec's CONTROL_LATENCY. */
const SLACK_MS = 4000;

function cancelRunning(role: 'cancel' | 'cancel_force'): (ctx: CaseContext) => Promise<void> {
  return async (ctx) => {
    const force = role === 'cancel_force';
    const queue = await ctx.newQueue('cancel');
    const work = await ctx.subdir('cancel/work');
    const log = path.join(work, 'starts.log');
    // The forced case ignores SIGTERM, so only SIGKILL stops it in time.
    const script = `${force ? "trap '' TERM; " : ''}sleep 30; printf 'late %s\\n' "$1" >> "$2"`;
    const request: JobRequest = { argv: logged(log, 'run', script), cwd: work, timeout_ms: 120_000 };
    const id = await ctx.produceOk(queue, request, ['CANCEL-1']);
    if (id === undefined) return;
    const consumer = ctx.startRole('consume', { queue });
    try {
      const started = await waitFor(async () => (await readStarts(log)).length > 0, 20_000);
      if (!started) {
        ctx.fail(['CANCEL-3', 'MANIFEST-1'], 'the job did not start within 20 s, so it could not be cancelled while running', listing(await ctx.snapshot(queue)));
        return;
      }
      const asked = Date.now();
      const cancel = await ctx.role(role, { queue, id });
      ctx.check(cancel.code === 0, ['CANCEL-1'], `${role} of a running job must succeed`, [describeExit(cancel)]);
      const receipt = path.join(queue, 'jobs', id, 'receipt.json');
      const finished = await waitFor(() => exists(receipt), CONTROL_LATENCY + 10_000 + SLACK_MS);
      const took = Date.now() - asked;
      const done = await consumer.done;
      const snapshot = await ctx.snapshot(queue);
      const evidence = [describeExit(done), ...listing(snapshot)];
      if (!ctx.check(finished, ['CANCEL-3'], `no receipt ${took} ms after the ${role} request`, evidence)) return;
      // sleep dies at the first SIGTERM (graceful) or SIGKILL (force): acting on the request is the only wait.
      // Measured between the records' own times, so a slow-starting cancel role does not count against the owner.
      const got = snapshot.jobs.get(id)?.receipt;
      const request = await readRecord(path.join(queue, 'jobs', id, force ? 'cancel-force.json' : 'cancel.json'), 'cancel', { expectedJobId: id });
      if (request.ok && got !== undefined) {
        const latency = got.finished_ms - request.value.requested_ms;
        ctx.check(latency <= CONTROL_LATENCY + SLACK_MS, ['CANCEL-3'], `the owner must act on a cancel record within CONTROL_LATENCY (${CONTROL_LATENCY} ms); the receipt was published ${latency} ms after the request`, evidence);
      } else {
        ctx.fail(['CANCEL-1'], `${force ? 'cancel-force.json' : 'cancel.json'} must be a valid cancel record: ${request.ok ? '' : request.findings[0]?.message}`, evidence);
      }
      const want = force ? { outcome: 'force_stopped', exit_code: 137 } : { outcome: 'cancelled', exit_code: 130 };
      ctx.check(got?.outcome === want.outcome && got.exit_code === want.exit_code, ['CANCEL-3', 'EXEC-10'], `a ${force ? 'forced' : 'graceful'} cancel of a running job ends ${want.outcome} (${want.exit_code}); got ${got?.outcome} (${got?.exit_code})`, evidence);
      const lines = (await readFile(log, 'utf8').catch(() => '')).split('\n');
      ctx.check(!lines.includes('late run'), ['CANCEL-3', 'EXEC-11'], 'the cancelled command kept running', evidence);
      ctx.check(done.code === 0, ['MANIFEST-1'], 'consume must exit 0 once nothing is runnable', evidence);
      for (const failure of await checkInvariants(snapshot, { accepted: [id] })) ctx.failures.push(failure);
    } finally {
      consumer.kill();
    }
  };
}

async function lanesCase(ctx: CaseContext): Promise<void> {
  const queue = await ctx.newQueue('lanes');
  const work = await ctx.subdir('lanes/work');
  const log = path.join(work, 'starts.log');
  const body = `sleep 0.4; printf 'end %s\\n' "$1" >> "$2"`;
  const laneTags = ['lane-1', 'lane-2', 'lane-3', 'lane-4'];
  const ids = new Map<string, string>();
  for (const tag of laneTags) {
    const id = await ctx.produceOk(queue, { argv: logged(log, tag, body), cwd: work, lane: 'the lane' }, ['LANE-1']);
    if (id !== undefined) ids.set(tag, id);
  }
  for (const tag of ['free-1', 'free-2']) {
    const id = await ctx.produceOk(queue, { argv: logged(log, tag, body), cwd: work }, ['LANE-1']);
    if (id !== undefined) ids.set(tag, id);
  }
  const runs = await Promise.all([ctx.role('consume', { queue }), ctx.role('consume', { queue })]);
  // A consumer may leave a job it found lane-busy: one more drain finishes it.
  const last = await ctx.role('consume', { queue });
  const snapshot = await ctx.snapshot(queue);
  for (const result of [...runs, last]) ctx.check(result.code === 0, ['MANIFEST-1'], 'consume must exit 0', [describeExit(result)]);
  const lines = (await readFile(log, 'utf8').catch(() => '')).split('\n').filter((line) => line !== '');
  let running: string | undefined;
  for (const line of lines) {
    const [what, tag] = line.split(' ');
    if (tag === undefined || !laneTags.includes(tag)) continue;
    if (what === 'start') {
      if (running !== undefined) {
        ctx.fail(['LANE-1', 'LANE-2'], `${tag} started while ${running} of the same lane was still running`, lines);
        break;
      }
      running = tag;
    } else if (what === 'end' && running === tag) {
      running = undefined;
    }
  }
  const counts = countBy(await readStarts(log));
  for (const [tag, id] of ids) {
    const receipt = snapshot.jobs.get(id)?.receipt;
    ctx.check(receipt?.outcome === 'succeeded' && counts.get(tag) === 1, ['LANE-2', 'I3'], `${tag} must run once and succeed after the drains; started ${counts.get(tag) ?? 0} times, receipt ${receipt?.outcome ?? 'none'}`, listing(snapshot, new Set([id])));
  }
  for (const failure of await checkInvariants(snapshot, { accepted: [...ids.values()] })) ctx.failures.push(failure);
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
  { name: 'consumer/cancel-running', clauses: ['CANCEL-3', 'EXEC-10', 'EXEC-11'], level: 'consumer', strength: 'MUST', roles: ['cancel'], run: cancelRunning('cancel') },
  { name: 'consumer/cancel-force-running', clauses: ['CANCEL-3', 'EXEC-10'], level: 'consumer', strength: 'MUST', roles: ['cancel_force'], run: cancelRunning('cancel_force') },
  { name: 'consumer/lanes', clauses: ['LANE-1', 'LANE-2'], level: 'consumer', strength: 'MUST', features: ['lanes'], heavy: true, run: lanesCase },
  { name: 'consumer/concurrency', clauses: ['CLAIM-5', 'I2', 'I3'], level: 'consumer', strength: 'MUST', heavy: true, run: concurrencyCase },
];
