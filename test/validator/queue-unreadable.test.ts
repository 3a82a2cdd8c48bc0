/**
 * fsjob validate QUEUE over entries the filesystem refuses to the queue's
 * owner (CONF-3, I8): a job directory of mode 0000, and a record or an
 * output file of mode 0000 inside a readable job, are each an
 * ENTRY_UNREADABLE finding with their path and errno, and every other job
 * is still audited (a damaged one's finding is reported beside them); the
 * audit exits 1 (findings), never 2 (it could not run). Root bypasses
 * permission checks, so fsjob runs as nobody through setpriv, on a queue
 * chowned to nobody.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { enqueue } from '../../src/producer/index.ts';
import { initQueue } from '../../src/model/queue.ts';
import { Worker } from '../../src/consumer/index.ts';
import type { ValidateReport } from '../../src/validator/index.ts';
import { cleanupAll, freshDir, NOBODY } from '../support/helpers.ts';
import { AS_NOBODY, assertNoCrash, fsjobCli, nobodyCannotRun } from '../support/faults.ts';

const nobodyBlocked = nobodyCannotRun();
if (nobodyBlocked !== undefined) console.log(`queue-unreadable: skipped, ${nobodyBlocked}`);

const unreadable = suite('validate QUEUE over entries it cannot read (ENTRY_UNREADABLE)');
unreadable.after(cleanupAll);

unreadable('a job directory, a record and an output of mode 0000 are ENTRY_UNREADABLE (path, errno EACCES); the other jobs are audited; exit 1', async () => {
  if (nobodyBlocked !== undefined) return;
  const dir = await freshDir('fsjob-queue-unreadable');
  const queue = await initQueue(join(dir, 'q'));
  const ids: string[] = [];
  // The third writes stdout, which its receipt describes: the audit reads it for RCPT-5 (an empty one is never opened).
  for (const argv of [['true'], ['true'], ['echo', 'out']] as [string, ...string[]][]) ids.push((await enqueue(queue, { argv }, { cwd: '/' })).id);
  await new Worker({ queues: [queue], mode: 'drain', pollMs: 50 }).run();
  const [closed, recordClosed, damaged] = ids as [string, string, string];
  // Published open (its dependency had succeeded, spec/gates.md): the audit must not judge it by a dependency it could not read (no AFTER_UNSATISFIED).
  const dependent = (await enqueue(queue, { argv: ['true'], after: [{ job_id: closed, when: 'succeeded' }] }, { cwd: '/' })).id;
  // A generation file without a claim: GEN_WITHOUT_CLAIM, an error the audit must still find past the unreadable job.
  writeFileSync(queue.paths.jobFile(damaged, 'stdout.9'), '', { mode: 0o600 });
  const chown = spawnSync('chown', ['-R', `${NOBODY}:${NOBODY}`, dir], { encoding: 'utf8' });
  assert.is(chown.status, 0, chown.stderr);
  chmodSync(queue.paths.job(closed), 0o000);
  chmodSync(queue.paths.jobFile(recordClosed, 'receipt.json'), 0o000);
  chmodSync(queue.paths.jobFile(damaged, 'stdout.1'), 0o000);

  const validate = fsjobCli(['validate', queue.root, '--json'], { prefix: AS_NOBODY });
  const human = fsjobCli(['validate', queue.root], { prefix: AS_NOBODY });
  chmodSync(queue.paths.job(closed), 0o700);
  chmodSync(queue.paths.jobFile(recordClosed, 'receipt.json'), 0o600);
  chmodSync(queue.paths.jobFile(damaged, 'stdout.1'), 0o600);
  for (const [what, done] of [['validate --json', validate], ['validate', human]] as const) {
    assertNoCrash(done, `fsjob ${what} as nobody`);
    assert.is(done.status, 1, `fsjob ${what} exits 1 (findings), not 2: ${done.stdout}${done.stderr}`);
  }
  const report = JSON.parse(validate.stdout) as ValidateReport;
  const found = report.findings.filter((finding) => finding.code === 'ENTRY_UNREADABLE');
  assert.equal(
    found.map((finding) => ({ path: finding.path, job_id: finding.job_id, errno: finding.errno, clause: finding.clause, severity: finding.severity })),
    [
      { path: queue.paths.job(closed), job_id: closed, errno: 'EACCES', clause: 'CONF-3', severity: 'error' },
      { path: queue.paths.jobFile(recordClosed, 'receipt.json'), job_id: recordClosed, errno: 'EACCES', clause: 'CONF-3', severity: 'error' },
      { path: queue.paths.jobFile(damaged, 'stdout.1'), job_id: damaged, errno: 'EACCES', clause: 'CONF-3', severity: 'error' },
    ].sort((a, b) => a.job_id.localeCompare(b.job_id)),
    `${validate.stdout}`,
  );
  assert.ok(
    report.findings.some((finding) => finding.code === 'GEN_WITHOUT_CLAIM' && finding.job_id === damaged && finding.path === queue.paths.jobFile(damaged, 'stdout.9')),
    `the damaged job is still audited: ${validate.stdout}`,
  );
  assert.equal(report.findings.filter((finding) => finding.job_id === dependent), [], `the dependent job is judged clean: ${validate.stdout}`);
  assert.is(report.summary.jobs, 4, 'every job was counted as examined');
  assert.match(human.stdout, `ENTRY_UNREADABLE [CONF-3] ${queue.paths.job(closed)}`);
});

unreadable.run();
