/**
 * Battery, soak with chaos (issue 6): see test/support/soak.ts for what runs.
 * Afterwards, on disk, the invariants of the brief:
 *
 * - I3 no accepted job lost: every id a producer printed is in jobs/, and
 *   every job there (printed or not) ends with exactly one receipt;
 * - I2 starts are bounded by attempts: each real start (start log) is an
 *   attempt the records count (RETRY-1), none twice, at most max_attempts,
 *   and the receipt reports the same count;
 * - every outcome is one the job's script and the crashes allow;
 * - nothing of a job runs any more (WORKER-2, RECOV-1);
 * - I8 `fsjob validate` finds no error.
 *
 * The queue is on tmpfs (/dev/shm): the soak is about crashes of processes
 * and their interleavings, not about power loss.
 *
 * FSJOB_SOAK_SECONDS (default 15) sets the chaos time; `npm run battery:soak`
 * runs 600 s. The figures go to stdout.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { initQueue } from '../../src/model/queue.ts';
import { batteryDir, finishedJobProblems, isDead, notable, readJobs, readStartLog, readyNames, removeBatteryDirs, tally, validateQueue } from '../support/battery.ts';
import { soak } from '../support/soak.ts';
import { withWatchdog } from '../support/helpers.ts';

const SECONDS = Number(process.env['FSJOB_SOAK_SECONDS'] ?? 15);

/** Live processes whose environment names this start log: commands of battery jobs still running. */
async function jobProcesses(log: string): Promise<number[]> {
  const marker = `BATTERY_LOG=${log}\0`;
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/environ`, 'latin1').includes(marker) && !(await isDead(Number(name)))) found.push(Number(name));
    } catch {
      // gone, or a kernel thread
    }
  }
  return found;
}

const chaos = suite('battery: soak with chaos');
chaos.after(removeBatteryDirs);

chaos(`producers and workers for ${SECONDS} s under SIGKILL/SIGTERM chaos, then recover and drain: nothing accepted lost, one receipt each, starts within attempts, validate clean`, async () => {
  const dir = await batteryDir('soak');
  const cwd = join(dir, 'cwd');
  mkdirSync(cwd, { mode: 0o700 });
  const log = join(dir, 'starts.log');
  const queue = await initQueue(join(dir, 'q'));
  const t0 = performance.now();
  const run = await withWatchdog(SECONDS * 1000 + 720_000, soak({ root: queue.root, log, cwd, seconds: SECONDS }));
  const finished = performance.now();
  assert.equal(run.refused, [], 'every request line was accepted');
  assert.ok(run.accepted.size > 0, 'the producers enqueued');
  assert.is(run.recover.code, 0, JSON.stringify(run.recover.report.unproven));
  run.finalDrain.forEach((d, i) => assert.is(d.code, 0, `final drain ${i}: ${d.stderr.slice(-2000)}`));

  const jobs = readJobs(queue.root);
  const ids = new Set(jobs.map((job) => job.id));
  assert.equal([...run.accepted].filter((id) => !ids.has(id)), [], 'I3: every accepted id is in jobs/');
  const starts = readStartLog(log);
  const problems: string[] = [];
  for (const job of jobs) {
    problems.push(...finishedJobProblems(job, starts.get(job.id) ?? [], { crashed: true }));
    const r = job.receipt;
    if (r === undefined) continue;
    const passAt = Number(job.spec.env['PASS_AT']);
    const ok =
      (r.outcome === 'succeeded' && r.exit_code === 0 && passAt <= r.attempts) ||
      (r.outcome === 'failed' && r.exit_code === Number(job.spec.env['FAIL_CODE']) && r.attempts === job.spec.max_attempts && passAt > r.attempts) ||
      (r.outcome === 'lost' && r.exit_code === 125 && (r.reason === 'owner_lost' || r.reason === 'shutdown') && r.attempts === job.spec.max_attempts);
    if (!ok) problems.push(`${job.id}: receipt ${r.outcome}/${r.exit_code}/${r.reason} after ${r.attempts} of ${job.spec.max_attempts} attempts does not fit PASS_AT ${passAt}`);
  }
  assert.equal(problems.slice(0, 20), [], `${problems.length} problems`);
  assert.equal(readyNames(queue.root), [], 'no runnable job is left');
  assert.equal(await jobProcesses(log), [], 'no command of a job still runs');

  const validated = await validateQueue(queue.root);
  assert.is(validated.code, 0, notable(validated.report));
  assert.is(validated.report.summary.errors, 0);

  // Generations that ended neither with an end record nor the receipt: their owner died and someone broke the claim (RECOV-1).
  const broken = jobs.reduce((n, job) => n + job.claims.slice(0, -1).filter((g) => !job.ends.has(g) && job.receipt?.gen !== g).length, 0);
  const kills = Object.values(run.kills).reduce((a, b) => a + b, 0);
  const totalStarts = [...starts.values()].reduce((n, list) => n + list.length, 0);
  console.log(
    `\n  soak: ${SECONDS} s of chaos, ${kills} kills survived ${JSON.stringify(run.kills)}, ${run.workersStarted} worker processes started; ` +
      `${run.accepted.size} jobs accepted of ${run.requested} requested, ${jobs.length} in jobs/, ${totalStarts} starts; ` +
      `receipts ${JSON.stringify(tally(jobs.map((job) => `${job.receipt?.outcome}${job.receipt?.reason ? `:${job.receipt.reason}` : ''}`)))}; ` +
      `${broken} claims of dead owners broken (${run.recover.report.claims_broken.length} by the final recover); validate: ${validated.report.summary.warnings} warnings, ${validated.report.summary.infos} infos; ` +
      `${((finished - t0) / 1000).toFixed(1)} s in all`,
  );
});

chaos.run();
