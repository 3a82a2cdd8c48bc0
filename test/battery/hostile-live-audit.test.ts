/**
 * `fsjob validate` under live traffic (issue 19 point 8): the help promises
 * it may run while producers and consumers work, so it must report nothing
 * that is not there. Its job scan and its read of the holds are two moments:
 * a lane job seen running in the first can have finished, and the next job of
 * its lane taken the lane's next hold, by the second. Read naively, that is a
 * LANE_UNHELD on a healthy queue (10 of 3,346 audits under load).
 *
 * The interleaving is forced, not waited for: the audit runs under strace,
 * which stops it (SIGSTOP injected) at its first open of tmp/ -- after the
 * job scan, before the holds are read. While it is stopped the first job's
 * command is let go (it waits for a gate file), its receipt is published and
 * the worker claims the second job of the lane; then the audit continues.
 * Likewise for a dedupe key: the job seen unfinished finishes and a new job
 * with the same key takes the key's next hold while the audit is stopped.
 *
 * Skipped with a printed reason where strace is missing or may not trace.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { waitFor } from '../support/consumer.ts';
import { fsjobCli, fsjobSpawn, queueAndCwd } from '../support/faults.ts';

const WAIT_MS = 90_000;

/** Why strace cannot stop a process here, or undefined when it can. */
function straceMissing(): string | undefined {
  const probe = spawnSync('strace', ['-qq', '-o', '/dev/null', '-e', 'trace=none', 'true'], { encoding: 'utf8' });
  if (probe.error !== undefined) return `strace is not installed (${probe.error.message})`;
  if (probe.status !== 0) return `strace cannot trace here: ${probe.stderr.trim()}`;
  return undefined;
}

/** The state letter of /proc/<pid>/stat, or undefined once it is gone. */
function procState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return undefined;
  }
}

/** A command that waits for its gate file, then exits 0. */
function gated(gate: string): string[] {
  return ['sh', '-c', `while [ ! -e ${gate} ]; do sleep 0.05; done`];
}

interface Audit {
  status: number | null;
  findings: { code: string; severity: string; message: string }[];
  stderr: string;
}

/**
 * Runs `fsjob validate --json root` stopped at its first open of tmp/; calls
 * `meanwhile` while it is stopped (its state read from /proc, so the audit
 * really is between its job scan and its hold read), then lets it go on.
 */
async function auditAcross(root: string, meanwhile: () => Promise<void>): Promise<Audit> {
  const log = join(await freshDir('live-audit-strace'), 'calls');
  const strace = ['strace', '-f', '-qq', '-o', log, '-P', join(root, 'tmp'), '-e', 'trace=openat', '-e', 'inject=openat:signal=SIGSTOP:when=1'];
  const run = fsjobSpawn(['validate', '--json', root], { prefix: strace });
  // strace writes the open's line when the call returns; the SIGSTOP it injected at
  // the call's entry is delivered before the process runs any code of its own again.
  const pid = await waitFor(
    'the audit to stop at its first open of tmp/',
    () => {
      const opened = /^(\d+)\s+openat\(/m.exec(existsSync(log) ? readFileSync(log, 'utf8') : '');
      if (opened !== null) return Number(opened[1]);
      return run.child.exitCode !== null ? -1 : undefined;
    },
    WAIT_MS,
  );
  assert.ok(pid > 0, `the audit ended before it opened tmp/: ${run.output().stderr}`);
  await waitFor('the audit to be stopped', () => /^[tT]$/.test(procState(pid) ?? 'T'), WAIT_MS);
  await meanwhile();
  process.kill(pid, 'SIGCONT');
  const done = await run.done;
  const report = JSON.parse(done.stdout) as { findings: Audit['findings'] };
  return { status: done.status, findings: report.findings, stderr: done.stderr };
}

const live = suite('hostile: validate under live traffic (LANE-2, DEDUPE-2)');
live.after(cleanupAll);

const missing = straceMissing();
if (missing !== undefined) console.log(`hostile-live-audit: skipped, ${missing}`);

live('a lane job that finishes while the audit runs, and the next job of its lane, are not LANE_UNHELD', async () => {
  if (missing !== undefined) return;
  const { queue, cwd } = await queueAndCwd('live-lane');
  const gates = await freshDir('live-lane-gates');
  const enqueue = (gate: string): string => {
    const r = fsjobCli(['enqueue', '--queue', queue.root, '--cwd', cwd, '--lane', 'deploy', '--', ...gated(join(gates, gate))]);
    assert.is(r.status, 0, r.stderr);
    return r.stdout.trim();
  };
  const first = enqueue('first');
  const second = enqueue('second');
  const worker = fsjobSpawn(['work', '--queue', queue.root, '--concurrency', '2']);
  try {
    await waitFor('the first job to run', () => existsSync(queue.paths.jobFile(first, 'exec.1.json')), WAIT_MS);
    assert.is(existsSync(queue.paths.jobFile(second, 'claim.1.json')), false, 'the second job waits for the lane (LANE-1)');
    const audit = await auditAcross(queue.root, async () => {
      writeFileSync(join(gates, 'first'), '');
      await waitFor('the first receipt', () => existsSync(queue.paths.jobFile(first, 'receipt.json')), WAIT_MS);
      await waitFor('the second job to run', () => existsSync(queue.paths.jobFile(second, 'exec.1.json')), WAIT_MS);
    });
    assert.equal(audit.findings, [], 'a healthy queue under traffic has no findings');
    assert.is(audit.status, 0, audit.stderr);
  } finally {
    writeFileSync(join(gates, 'second'), '');
    await waitFor('the second receipt', () => existsSync(queue.paths.jobFile(second, 'receipt.json')), WAIT_MS).catch(() => undefined);
    worker.child.kill('SIGTERM');
    await worker.done;
  }
  const after = fsjobCli(['validate', queue.root]);
  assert.is(after.status, 0, `the queue at rest is clean: ${after.stdout}${after.stderr}`);
});

live('a dedupe job that finishes while the audit runs, and the next job of its key, are not DEDUPE_UNHELD', async () => {
  if (missing !== undefined) return;
  const { queue, cwd } = await queueAndCwd('live-dedupe');
  const gates = await freshDir('live-dedupe-gates');
  const enqueue = (gate: string): string => {
    const r = fsjobCli(['enqueue', '--queue', queue.root, '--cwd', cwd, '--dedupe', 'nightly', '--', ...gated(join(gates, gate))]);
    assert.is(r.status, 0, r.stderr);
    return r.stdout.trim();
  };
  const first = enqueue('first');
  const worker = fsjobSpawn(['work', '--queue', queue.root]);
  let second: string | undefined;
  try {
    await waitFor('the first job to run', () => existsSync(queue.paths.jobFile(first, 'exec.1.json')), WAIT_MS);
    const audit = await auditAcross(queue.root, async () => {
      writeFileSync(join(gates, 'first'), '');
      await waitFor('the first receipt', () => existsSync(queue.paths.jobFile(first, 'receipt.json')), WAIT_MS);
      second = enqueue('second');
      assert.is.not(second, first, 'a new job: the key was free again');
    });
    assert.equal(audit.findings, [], 'a healthy queue under traffic has no findings');
    assert.is(audit.status, 0, audit.stderr);
  } finally {
    writeFileSync(join(gates, 'second'), '');
    if (second !== undefined) await waitFor('the second receipt', () => existsSync(queue.paths.jobFile(second as string, 'receipt.json')), WAIT_MS).catch(() => undefined);
    worker.child.kill('SIGTERM');
    await worker.done;
  }
});

live.run();
