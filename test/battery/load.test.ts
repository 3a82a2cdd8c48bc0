/**
 * Battery, load (issue 6): 8 `fsjob work --drain` processes over one queue of
 * mixed jobs (lanes, priorities, retries, failing commands). Afterwards, from
 * what is on disk: every job started exactly as often as its attempts allow
 * (the start log, exec and end records and the receipt agree), exactly one
 * receipt each, no two executions of one lane overlapped (exec.recorded_ms to
 * end.ended_ms / receipt.finished_ms), and `fsjob validate` finds nothing.
 *
 * The queue lives on tmpfs (/dev/shm): this test is about concurrency
 * invariants between processes, not durability, and the disk's fsync latency
 * would only make it slower.
 *
 * Size: FSJOB_BATTERY_JOBS (default 150) jobs; FSJOB_BATTERY_LONG=1 (npm run
 * battery:long) runs the full 5,000. The figures go to stdout.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { existsSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { initQueue } from '../../src/model/queue.ts';
import { enqueue } from '../../src/producer/index.ts';
import {
  batteryDir,
  batteryRequest,
  expectedEnd,
  finishedJobProblems,
  laneOverlaps,
  notable,
  readJobs,
  readStartLog,
  readyNames,
  removeBatteryDirs,
  rng,
  startFsjob,
  tally,
  validateQueue,
} from '../support/battery.ts';
import { withWatchdog } from '../support/helpers.ts';
import * as nodeFs from 'node:fs/promises';
import { openQueue } from '../../src/model/queue.ts';
import { currentHold, holdDir, takeHold } from '../../src/model/holds.ts';
import { realReads, type SafeFsSeam } from '../../src/fs/safefs.ts';
import { enqueue as enqueueJob, freshQueue, newJobId } from '../support/enqueue.ts';
import { drain, jobFiles, readJson, receiptOf } from '../support/consumer.ts';
import type { EndRecord } from '../../src/records/codec.ts';
import { cleanupAll } from '../support/helpers.ts';

const LONG = process.env['FSJOB_BATTERY_LONG'] === '1';
const JOBS = Number(process.env['FSJOB_BATTERY_JOBS'] ?? (LONG ? 5000 : 150));
const CONSUMERS = 8;
const SEED = Number(process.env['FSJOB_BATTERY_SEED'] ?? 6);

const load = suite('battery: load');
load.after(removeBatteryDirs);

load(`${CONSUMERS} consumer processes drain ${JOBS} mixed jobs: each started exactly as its attempts allow, one receipt each, lanes serial, validate clean`, async () => {
  const dir = await batteryDir('load');
  const cwd = join(dir, 'cwd');
  mkdirSync(cwd, { mode: 0o700 });
  const log = join(dir, 'starts.log');
  const queue = await initQueue(join(dir, 'q'));
  const random = rng(SEED);
  const t0 = performance.now();
  for (let i = 0; i < JOBS; i++) await enqueue(queue, batteryRequest(random, log, cwd));
  const enqueued = performance.now();

  const workers = Array.from({ length: CONSUMERS }, () => startFsjob(['work', '--queue', queue.root, '--drain', '--json']));
  const exits = await withWatchdog(
    LONG ? 7_200_000 : 600_000,
    Promise.all(workers.map((w) => w.exited)),
    () => workers.forEach((w) => w.child.kill('SIGKILL')),
  );
  const drained = performance.now();
  exits.forEach((exit, i) => assert.equal(exit, { code: 0, signal: null }, `worker ${i}: ${workers[i]?.stderr.slice(-2000)}`));
  const summaries = workers.map((w) => JSON.parse(w.stdout) as { claimed: number; errors: number; superseded: number; unproven: number });
  assert.is(summaries.reduce((n, s) => n + s.errors + s.superseded + s.unproven, 0), 0, `worker errors: ${workers.map((w) => w.stderr.split('\n').filter((l) => l.includes('"error"')).slice(0, 3).join('\n')).join('\n')}`);

  const jobs = readJobs(queue.root);
  assert.is(jobs.length, JOBS, 'every enqueued job is in jobs/');
  const starts = readStartLog(log);
  const problems: string[] = [];
  for (const job of jobs) {
    const started = starts.get(job.id) ?? [];
    problems.push(...finishedJobProblems(job, started, { crashed: false }));
    const expected = expectedEnd(job.spec);
    const r = job.receipt;
    // Exactly as often as its attempts allow: attempts 1..n each once, n fixed by the job's own script.
    if (started.length !== expected.starts || job.attemptsUsed !== expected.starts) problems.push(`${job.id}: started ${started.length} times (records: ${job.attemptsUsed}), expected ${expected.starts}`);
    if (r !== undefined && (r.outcome !== expected.outcome || r.exit_code !== expected.exitCode)) problems.push(`${job.id}: receipt ${r.outcome}/${r.exit_code}, expected ${expected.outcome}/${expected.exitCode}`);
  }
  problems.push(...laneOverlaps(jobs));
  assert.equal(problems.slice(0, 20), [], `${problems.length} problems`);
  assert.equal(readyNames(queue.root), [], 'every ready entry is gone with its receipt (READY-2)');

  const validated = await validateQueue(queue.root);
  assert.is(validated.code, 0, notable(validated.report));
  assert.is(validated.report.summary.errors, 0);
  assert.is(validated.report.summary.warnings, 0, notable(validated.report));
  assert.is(validated.report.summary.jobs, JOBS);
  const audited = performance.now();

  const outcomes = tally(jobs.map((job) => job.receipt?.outcome ?? 'none'));
  const lanes = jobs.filter((job) => job.spec.lane !== null).length;
  const totalStarts = [...starts.values()].reduce((n, list) => n + list.length, 0);
  const ends = tally(jobs.flatMap((job) => [...job.ends.values()].map((end) => end.reason)));
  console.log(
    `\n  load: ${JOBS} jobs (${lanes} in ${3} lanes), ${CONSUMERS} consumer processes: ${totalStarts} starts, claims ${summaries.reduce((n, s) => n + s.claimed, 0)}, ` +
      `receipts ${JSON.stringify(outcomes)}, end records ${JSON.stringify(ends)}; enqueue ${((enqueued - t0) / 1000).toFixed(1)} s, ` +
      `drain ${((drained - enqueued) / 1000).toFixed(1)} s (${((JOBS / (drained - enqueued)) * 1000).toFixed(0)} jobs/s), audit+validate ${((audited - drained) / 1000).toFixed(1)} s`,
  );
});

load.run();

/** Regressions of what the load run found, made deterministic. */
const found = suite('battery: load regressions');
found.after(cleanupAll);

found('a highest hold pruned between listing and reading it makes the reader look again (LANE-3), not fail', async () => {
  const queue = await freshQueue('hold-race');
  const dir = holdDir(queue, 'lane', 'L');
  const first = join(dir, '1.json');
  const stash = join(queue.root, 'tmp', 'hold-2-stash');
  await takeHold(queue, 'lane', 'L', async () => false, { jobId: newJobId(), gen: 1 });
  const firstBytes = readFileSync(first);
  // Hold 2 is taken for real, then set aside so that the reader lists only hold 1;
  // hold 1 is put back if taking 2 pruned it (LANE-3 allows it).
  const second = newJobId();
  await takeHold(queue, 'lane', 'L', async () => false, { jobId: second, gen: 1 });
  renameSync(join(dir, '2.json'), stash);
  if (!existsSync(first)) writeFileSync(first, firstBytes, { mode: 0o600 });
  let raced = false;
  const seam: SafeFsSeam = {
    ...nodeFs,
    reads: {
      ...realReads,
      // Reads are synchronous (fs/seam.ts): just before hold 1 is opened, the
      // other consumer's publication of hold 2 and its pruning of hold 1 happen.
      open: (path: string, flags: number) => {
        if (!raced && path === first) {
          raced = true;
          renameSync(stash, join(dir, '2.json'));
          unlinkSync(first);
        }
        return realReads.open(path, flags);
      },
    },
  };
  const view = await currentHold(await openQueue(queue.root, { fs: seam }), 'lane', 'L');
  assert.ok(raced, 'the race was staged');
  assert.is(view?.n, 2);
  assert.is(view?.hold?.job_id, second);
});

found('a hold number removed below a newer hold is not taken by linking it again: the taker lists once more (LANE-2)', async () => {
  const queue = await freshQueue('hold-reuse');
  const dir = holdDir(queue, 'lane', 'L');
  const holder = newJobId();
  await takeHold(queue, 'lane', 'L', async () => false, { jobId: newJobId(), gen: 1 });
  // Holds 2 and 3 are taken through a second queue handle: another consumer.
  let raced = false;
  const seam: SafeFsSeam = {
    ...nodeFs,
    reads: realReads,
    // Just before the taker links 2.json (it judged hold 1 free): others took
    // 2, then 3, and 3's publisher removed 2 (LANE-3 allows it).
    link: async (from, to) => {
      if (!raced && String(to) === join(dir, '2.json')) {
        raced = true;
        const rival = await openQueue(queue.root);
        await takeHold(rival, 'lane', 'L', async () => false, { jobId: newJobId(), gen: 1 });
        await takeHold(rival, 'lane', 'L', async () => false, { jobId: holder, gen: 1 });
        assert.ok(!existsSync(join(dir, '2.json')) && existsSync(join(dir, '3.json')), 'hold 3 published, hold 2 removed below it');
      }
      return nodeFs.link(from, to);
    },
  };
  const held = async (hold: { job_id: string }): Promise<boolean> => hold.job_id === holder;
  const result = await takeHold(await openQueue(queue.root, { fs: seam }), 'lane', 'L', held, { jobId: newJobId(), gen: 1 });
  assert.ok(raced, 'the race was staged');
  assert.is(result.taken, false, 'hold 3 is held: the lane is busy');
  if (!result.taken) assert.is(result.current.n, 3);
  assert.ok(existsSync(join(dir, '3.json')), 'the highest hold stays (LANE-3)');
});

found.run();
