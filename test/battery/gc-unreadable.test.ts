/**
 * `fsjob gc --all` on a queue where some finished jobs cannot be read or
 * moved by the queue's owner (job directories of mode 0000 and 0500: EACCES;
 * root bypasses permission checks, so gc runs as nobody through setpriv).
 * Those jobs are listed under `failed` with their errno and left in place,
 * every other finished job is still removed (one bad entry never stops a
 * whole-queue command, I7), and the exit status is 1.
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
if (nobodyBlocked !== undefined) console.log(`gc-unreadable: skipped, ${nobodyBlocked}`);

const unreadable = suite('gc over finished jobs their owner cannot read or move');
unreadable.after(cleanupAll);

unreadable('jobs of mode 0000 and 0500 are listed as failed (EACCES) and kept; the other finished jobs are removed; exit 1', async () => {
  if (nobodyBlocked !== undefined) return;
  const dir = await freshDir('fsjob-gc-unreadable');
  const queue = await initQueue(join(dir, 'q'));
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) ids.push((await enqueue(queue, { argv: ['true'] }, { cwd: '/' })).id);
  await new Worker({ queues: [queue], mode: 'drain', pollMs: 50 }).run();
  const chown = spawnSync('chown', ['-R', `${NOBODY}:${NOBODY}`, dir], { encoding: 'utf8' });
  assert.is(chown.status, 0, chown.stderr);
  const [closed, readOnly, ...fine] = ids as [string, string, string, string];
  chmodSync(queue.paths.job(closed), 0o000);
  chmodSync(queue.paths.job(readOnly), 0o500);

  const run = fsjobCli(['gc', '--all', '--queue', queue.root, '--json'], { prefix: AS_NOBODY });
  assertNoCrash(run, 'fsjob gc as nobody');
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
});

unreadable.run();
