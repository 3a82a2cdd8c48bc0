/**
 * `fsjob status` on a queue where one job directory cannot be read by the
 * queue's owner (mode 0000: EACCES; root bypasses permission checks, so
 * fsjob runs as nobody through setpriv, as unreadable-jobs.test.ts does).
 * The queue view shows every other job and lists the unreadable one apart
 * (id, path, errno), exit 1 (the view is incomplete, as gc's failed list);
 * `fsjob status ID` of that job still fails with the IO error and its path.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync } from 'node:fs';
import { cleanupAll } from '../support/helpers.ts';
import { AS_NOBODY, assertNoCrash, fsjobCli, nobodyCannotRun, nobodysQueueWithClosedJobs } from '../support/faults.ts';
import { assertOutputSchema } from '../support/output-schemas.ts';

const nobodyBlocked = nobodyCannotRun();
if (nobodyBlocked !== undefined) console.log(`status-unreadable: skipped, ${nobodyBlocked}`);

interface StatusJson {
  total: number;
  jobs: { id: string; status: string }[];
  unreadable: { id: string; path: string; errno: string | null }[];
}

const unreadable = suite('fsjob status over a job directory its owner cannot read');
unreadable.after(cleanupAll);

unreadable('the queue view lists every readable job and the one of mode 0000 apart with EACCES, exit 1; status ID of it fails with IO', async () => {
  if (nobodyBlocked !== undefined) return;
  const { queue, closedFinished, fineFinished, closedQueued, held } = await nobodysQueueWithClosedJobs('fsjob-status-unreadable');

  const listed = fsjobCli(['status', '--queue', queue.root, '--json', '--limit', '0'], { prefix: AS_NOBODY });
  const exact = fsjobCli(['status', '--queue', queue.root, '--json', '--exact', '--sort', 'duration'], { prefix: AS_NOBODY });
  const text = fsjobCli(['status', '--queue', queue.root], { prefix: AS_NOBODY });
  const one = fsjobCli(['status', '--queue', queue.root, closedFinished, '--json'], { prefix: AS_NOBODY });
  for (const [what, done] of [['status --json', listed], ['status --exact', exact], ['status', text], ['status ID', one]] as const) assertNoCrash(done, `fsjob ${what} as nobody`);
  for (const id of [closedFinished, closedQueued]) chmodSync(queue.paths.job(id), 0o700);
  chmodSync(queue.paths.gatedJob(held), 0o700);

  for (const [what, run] of [['--limit 0', listed], ['--exact --sort duration', exact]] as const) {
    assert.is(run.status, 1, `status ${what} exits 1 when a job could not be read: ${run.stdout}${run.stderr}`);
    const view = JSON.parse(run.stdout) as StatusJson;
    assertOutputSchema('status', view);
    assert.is(view.total, 4);
    assert.equal(view.jobs.map((job) => job.id), [fineFinished], `status ${what} shows the readable job`);
    assert.equal(
      view.unreadable.map((entry) => [entry.id, entry.errno]).sort(),
      [[closedFinished, 'EACCES'], [closedQueued, 'EACCES'], [held, 'EACCES']].sort(),
      `status ${what} lists the unreadable jobs: ${run.stdout}`,
    );
    for (const entry of view.unreadable) assert.ok(entry.path.startsWith(queue.paths.dir('jobs')), `${entry.path} is in jobs/`);
  }
  assert.is(text.status, 1, `status exits 1: ${text.stdout}${text.stderr}`);
  assert.ok(text.stdout.includes(fineFinished), `the table shows ${fineFinished}: ${text.stdout}`);
  assert.ok(text.stderr.includes(closedQueued), `stderr names ${closedQueued}: ${text.stderr}`);

  assert.is(one.status, 1, `status ID of the unreadable job fails: ${one.stdout}${one.stderr}`);
  const refusal = (JSON.parse(one.stdout) as { error: { code: string; errno?: string; path?: string } }).error;
  assert.equal([refusal.code, refusal.errno], ['IO', 'EACCES']);
  assert.ok(refusal.path?.startsWith(queue.paths.job(closedFinished)), `the error names its path: ${one.stdout}`);
});

unreadable.run();
