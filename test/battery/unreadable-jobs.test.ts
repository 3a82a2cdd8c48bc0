/**
 * Whole-queue commands on a queue where some finished jobs cannot be read or
 * moved by the queue's owner (job directories of mode 0000 and 0500: EACCES;
 * root bypasses permission checks, so fsjob runs as nobody through setpriv).
 * `gc --all` lists those jobs under `failed` with their errno and leaves
 * them in place, still removes every other finished job (one bad entry never
 * stops a whole-queue command, I7), and exits 1; `recover` lists what it
 * could not read under `failed` and exits 1; `validate`, which cannot finish
 * its audit, exits 2 (it could not run), never 1 (findings) without a report.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { enqueue } from '../../src/producer/index.ts';
import { initQueue } from '../../src/model/queue.ts';
import { Worker } from '../../src/consumer/index.ts';
import { cleanupAll, freshDir, NOBODY } from '../support/helpers.ts';
import { AS_NOBODY, assertNoCrash, fsjobCli } from '../support/faults.ts';

/** nobody must reach this checkout (one cloned into a directory closed to others cannot run as nobody, which says nothing of fsjob). */
const nobodyBlocked = ((): string | undefined => {
  const run = fsjobCli(['--version'], { prefix: AS_NOBODY });
  return run.status === 0 ? undefined : `nobody (uid ${NOBODY}) cannot run this checkout's fsjob: ${run.stderr.slice(0, 200)}`;
})();
if (nobodyBlocked !== undefined) console.log(`unreadable-jobs: skipped, ${nobodyBlocked}`);

const unreadable = suite('whole-queue commands over jobs their owner cannot read or move');
unreadable.after(cleanupAll);

unreadable('gc and recover list jobs of mode 0000 and 0500 as failed (EACCES) and exit 1, gc removing the others; validate exits 2', async () => {
  if (nobodyBlocked !== undefined) return;
  const dir = await freshDir('fsjob-unreadable-jobs');
  const queue = await initQueue(join(dir, 'q'));
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) ids.push((await enqueue(queue, { argv: ['true'] }, { cwd: '/' })).id);
  await new Worker({ queues: [queue], mode: 'drain', pollMs: 50 }).run();
  const chown = spawnSync('chown', ['-R', `${NOBODY}:${NOBODY}`, dir], { encoding: 'utf8' });
  assert.is(chown.status, 0, chown.stderr);
  const [closed, readOnly, ...fine] = ids as [string, string, string, string];
  chmodSync(queue.paths.job(closed), 0o000);
  chmodSync(queue.paths.job(readOnly), 0o500);

  const validate = fsjobCli(['validate', queue.root, '--json'], { prefix: AS_NOBODY });
  const recover = fsjobCli(['recover', '--queue', queue.root, '--json'], { prefix: AS_NOBODY });
  const run = fsjobCli(['gc', '--all', '--queue', queue.root, '--json'], { prefix: AS_NOBODY });
  for (const [what, done] of [['validate', validate], ['recover', recover], ['gc', run]] as const) assertNoCrash(done, `fsjob ${what} as nobody`);
  chmodSync(queue.paths.job(closed), 0o700);
  chmodSync(queue.paths.job(readOnly), 0o700);
  assert.is(run.status, 1, `gc exits 1 when a job could not be collected: ${run.stdout}${run.stderr}`);
  const result = JSON.parse(run.stdout) as { jobs: string[]; failed: { id: string | null; errno: string | null }[] };
  assert.equal([...result.jobs].sort(), [...fine].sort(), 'every readable finished job was removed');
  for (const id of [closed, readOnly]) {
    assert.ok(result.failed.some((entry) => entry.id === id && entry.errno === 'EACCES'), `${id} is listed as failed with EACCES: ${run.stdout}`);
    assert.ok(existsSync(queue.paths.jobFile(id, 'receipt.json')), `${id} is still whole in jobs/`);
  }
  for (const id of fine) assert.not.ok(existsSync(queue.paths.job(id)), `${id} is gone`);

  assert.is(validate.status, 2, `validate could not finish its audit: ${validate.stdout}${validate.stderr}`);
  const refusal = (JSON.parse(validate.stdout) as { error: { code: string; errno?: string } }).error;
  assert.equal([refusal.code, refusal.errno], ['IO', 'EACCES']);
  assert.is(recover.status, 1, `recover exits 1: ${recover.stdout}${recover.stderr}`);
  const recovered = JSON.parse(recover.stdout) as { failed: { job_id: string | null; errno: string | null }[] };
  assert.ok(recovered.failed.some((entry) => entry.job_id === closed && entry.errno === 'EACCES'), `recover lists ${closed}: ${recover.stdout}`);
});

unreadable.run();
