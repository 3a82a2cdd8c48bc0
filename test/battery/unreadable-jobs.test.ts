/**
 * Whole-queue commands on a queue where some finished jobs cannot be read or
 * moved by the queue's owner (job directories of mode 0000 and 0500: EACCES;
 * root bypasses permission checks, so fsjob runs as nobody through setpriv).
 * `gc --all` lists those jobs under `failed` with their errno and leaves
 * them in place, still removes every other finished job (one bad entry never
 * stops a whole-queue command, I7), and exits 1; `recover` lists what it
 * could not read under `failed` and exits 1; `validate` reports the job it
 * could not read as ENTRY_UNREADABLE and exits 1 (findings, with a report;
 * test/validator/queue-unreadable.test.ts has the rest).
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
import { AS_NOBODY, assertNoCrash, fsjobCli, nobodyCannotRun } from '../support/faults.ts';

const nobodyBlocked = nobodyCannotRun();
if (nobodyBlocked !== undefined) console.log(`unreadable-jobs: skipped, ${nobodyBlocked}`);

const unreadable = suite('whole-queue commands over jobs their owner cannot read or move');
unreadable.after(cleanupAll);

unreadable('gc and recover list jobs of mode 0000 and 0500 as failed (EACCES) and exit 1, gc removing the others; validate reports ENTRY_UNREADABLE', async () => {
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

  assert.is(validate.status, 1, `validate reports what it could not read as findings: ${validate.stdout}${validate.stderr}`);
  const audit = JSON.parse(validate.stdout) as { findings: { code: string; job_id: string | null; errno?: string }[] };
  assert.equal(audit.findings.filter((finding) => finding.code === 'ENTRY_UNREADABLE').map((finding) => [finding.job_id, finding.errno]), [[closed, 'EACCES']]);
  assert.is(recover.status, 1, `recover exits 1: ${recover.stdout}${recover.stderr}`);
  const recovered = JSON.parse(recover.stdout) as { failed: { job_id: string | null; errno: string | null }[] };
  assert.ok(recovered.failed.some((entry) => entry.job_id === closed && entry.errno === 'EACCES'), `recover lists ${closed}: ${recover.stdout}`);
});

unreadable.run();
