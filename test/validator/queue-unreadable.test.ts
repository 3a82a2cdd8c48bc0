/**
 * fsjob validate QUEUE over entries the filesystem refuses to the queue's
 * owner (CONF-3, I8): a job directory of mode 0000, a record or an output
 * file of mode 0000 inside a readable job, and a queue directory of mode
 * 0000 (jobs/, ready/, dedupe/, lanes/, workers/) are each an
 * ENTRY_UNREADABLE finding with their path and errno; every other job is
 * still audited (a damaged one's finding is reported beside them), nothing
 * is judged by what a refused directory holds, and the audit exits 1
 * (findings), never 2. A target the user cannot even look at exits 2 (it
 * could not run) with the IO error. Root bypasses permission checks, so
 * fsjob runs as nobody through setpriv, on a queue chowned to nobody.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
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

/** The queue at `root` given to nobody (with `dir`, above it), with `closed` (directories under it) at mode 0000 while nobody validates it. */
function validateClosed(dir: string, root: string, closed: string[]): ValidateReport {
  const chown = spawnSync('chown', ['-R', `${NOBODY}:${NOBODY}`, dir], { encoding: 'utf8' });
  assert.is(chown.status, 0, chown.stderr);
  for (const name of closed) chmodSync(join(root, name), 0o000);
  const run = fsjobCli(['validate', root, '--json'], { prefix: AS_NOBODY });
  for (const name of closed) chmodSync(join(root, name), 0o700);
  assertNoCrash(run, 'fsjob validate as nobody');
  assert.is(run.status, 1, `validate exits 1 (findings), not 2: ${run.stdout}${run.stderr}`);
  return JSON.parse(run.stdout) as ValidateReport;
}

unreadable('ready/, dedupe/, lanes/ and workers/ of mode 0000 are ENTRY_UNREADABLE; nothing is judged by what they hold (no READY_MISSING, DEDUPE_UNHELD)', async () => {
  if (nobodyBlocked !== undefined) return;
  const dir = await freshDir('fsjob-queue-unlisted');
  const queue = await initQueue(join(dir, 'q'));
  await enqueue(queue, { argv: ['true'], dedupe: 'nightly', lane: 'site' }, { cwd: '/' });
  const closed = ['ready', 'dedupe', 'lanes', 'workers'];
  const report = validateClosed(dir, queue.root, closed);
  assert.equal(
    report.findings.map((finding) => `${finding.code} ${finding.path} ${finding.errno ?? '-'} ${finding.job_id ?? '-'}`).sort(),
    closed.map((name) => `ENTRY_UNREADABLE ${join(queue.root, name)} EACCES -`).sort(),
  );
});

unreadable('jobs/ of mode 0000 is ENTRY_UNREADABLE; an old ready entry and a hold are not reported as naming missing jobs', async () => {
  if (nobodyBlocked !== undefined) return;
  const dir = await freshDir('fsjob-queue-unlisted-jobs');
  const queue = await initQueue(join(dir, 'q'));
  await enqueue(queue, { argv: ['true'], dedupe: 'nightly' }, { cwd: '/' });
  // Older than TEMP_MAX_AGE (60 minutes): an entry READY-3 would call garbage if its job were known to be missing.
  const [entry] = readdirSync(join(queue.root, 'ready'));
  const old = new Date(Date.now() - 2 * 3_600_000);
  utimesSync(join(queue.root, 'ready', entry as string), old, old);
  const report = validateClosed(dir, queue.root, ['jobs']);
  assert.equal(report.findings.map((finding) => `${finding.code} ${finding.path} ${finding.errno ?? '-'}`), [`ENTRY_UNREADABLE ${join(queue.root, 'jobs')} EACCES`]);
  assert.is(report.summary.jobs, 0);
});

unreadable('a target under a directory closed to the user exits 2 with the IO error and its errno, never an internal error', async () => {
  if (nobodyBlocked !== undefined) return;
  const dir = await freshDir('fsjob-validate-closed');
  const queue = await initQueue(join(dir, 'q'));
  // freshDir is root's, mode 0700: nobody cannot look inside it.
  const run = fsjobCli(['validate', queue.root, '--json'], { prefix: AS_NOBODY });
  assertNoCrash(run, 'fsjob validate as nobody');
  assert.is(run.status, 2, `${run.stdout}${run.stderr}`);
  const refusal = (JSON.parse(run.stdout) as { error: { code: string; errno?: string; path?: string } }).error;
  assert.equal([refusal.code, refusal.errno, refusal.path], ['IO', 'EACCES', queue.root]);
});

unreadable.run();
