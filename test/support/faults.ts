/**
 * Fixtures of the fault battery (issue 6): real filesystems made by the test
 * (a size-limited tmpfs, a read-only remount), the real `fsjob` command run
 * as another process (under a low RLIMIT_NOFILE, as another uid), and the
 * end-of-test check that nothing accepted was lost: after the fault is
 * removed, recover + drain give every accepted job exactly one receipt and
 * validate finds no error.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, existsSync, readdirSync } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import { initQueue, type Queue } from '../../src/model/queue.ts';
import { recover, Worker } from '../../src/consumer/index.ts';
import { enqueue } from '../../src/producer/index.ts';
import { auditQueue } from '../../src/validator/queue.ts';
import { freshDir, NOBODY } from './helpers.ts';

import { FSJOB_ARGV, FSJOB_BIN } from './cli.ts';

export { FSJOB_ARGV, FSJOB_BIN };

/** A tmpfs of `bytes` mounted on a fresh private directory; null (with a printed reason) where mounting is not allowed. */
export async function mountTmpfs(bytes: number, label = 'fsjob-tmpfs'): Promise<{ dir: string; unmount: () => void } | null> {
  const dir = await freshDir(label);
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes},mode=0700`, 'tmpfs', dir], { encoding: 'utf8' });
  if (mounted.status !== 0) {
    console.log(`SKIP ${label}: cannot mount a tmpfs here (mount exited ${mounted.status}: ${(mounted.stderr ?? mounted.error?.message ?? '').trim()}); this fault needs root and mount(2)`);
    return null;
  }
  return { dir, unmount: () => void spawnSync('umount', ['-l', dir]) };
}

/** Remount a tmpfs read-only (true) or read-write (false). */
export function remount(dir: string, readOnly: boolean): void {
  const done = spawnSync('mount', ['-o', `remount,${readOnly ? 'ro' : 'rw'}`, dir], { encoding: 'utf8' });
  if (done.status !== 0) throw new Error(`remount ${dir} failed: ${done.stderr}`);
}

/** Fills the filesystem of `dir` with one file until ENOSPC; returns the file (remove it to free the space). */
export async function fillUp(dir: string): Promise<string> {
  const path = join(dir, 'filler');
  const handle = await open(path, 'w', 0o600);
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  try {
    for (;;) {
      try {
        await handle.write(chunk);
      } catch (error) {
        if ((error as { code?: string }).code === 'ENOSPC') break;
        throw error;
      }
    }
    // Partial pages: write byte by byte until even one byte does not fit.
    for (;;) {
      try {
        const { bytesWritten } = await handle.write(Buffer.from('a'));
        if (bytesWritten === 0) break;
      } catch {
        break;
      }
    }
  } finally {
    await handle.close();
  }
  return path;
}

export async function freeUp(filler: string): Promise<void> {
  await rm(filler, { force: true });
}

export interface CliRun {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** argv prefix that runs a program as nobody (root bypasses permission checks, so EACCES needs another uid). */
export const AS_NOBODY = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--'];

export interface SpawnOptions {
  /** argv prefix such as AS_NOBODY. */
  prefix?: string[];
  env?: NodeJS.ProcessEnv;
  /** @default "/" (readable by every uid) */
  cwd?: string;
}

/** Runs `fsjob <args>` in another process, optionally behind a prefix (setpriv, prlimit). */
export function fsjobCli(args: string[], options: SpawnOptions & { timeoutMs?: number } = {}): CliRun {
  const argv = [...(options.prefix ?? []), ...FSJOB_ARGV, ...args];
  const done = spawnSync(argv[0] as string, argv.slice(1), {
    encoding: 'utf8',
    cwd: options.cwd ?? '/',
    env: { ...process.env, ...options.env },
    timeout: options.timeoutMs ?? 60_000,
    killSignal: 'SIGKILL',
  });
  return { status: done.status, signal: done.signal, stdout: done.stdout ?? '', stderr: done.stderr ?? '' };
}

/**
 * Why this checkout's fsjob cannot run as nobody (AS_NOBODY), or undefined
 * when it can. One cloned under a directory closed to others fails to load,
 * which says nothing of fsjob: a test that needs nobody prints this and skips.
 */
export function nobodyCannotRun(): string | undefined {
  const run = fsjobCli(['--version'], { prefix: AS_NOBODY });
  return run.status === 0 ? undefined : `nobody (uid ${NOBODY}) cannot run this checkout's fsjob (a directory above it is closed to others?): ${run.stderr.split('\n').find((line) => /Error|denied/.test(line)) ?? run.stderr.slice(0, 200)}`;
}

/**
 * A queue owned by nobody, for `status` over job directories nobody cannot
 * read (root reads through modes, so the commands run as nobody): two
 * finished jobs, one queued and one held (jobs/<id>.gated/); the first
 * finished, the queued and the held one closed (mode 0000).
 */
export async function nobodysQueueWithClosedJobs(label: string): Promise<{ queue: Queue; closedFinished: string; fineFinished: string; closedQueued: string; held: string }> {
  const dir = await freshDir(label);
  const queue = await initQueue(join(dir, 'q'));
  const add = async (hold = false): Promise<string> => (await enqueue(queue, { argv: ['true'], ...(hold ? { hold } : {}) }, { cwd: '/' })).id;
  const closedFinished = await add();
  const fineFinished = await add();
  await new Worker({ queues: [queue], mode: 'drain', pollMs: 50 }).run();
  const closedQueued = await add();
  const held = await add(true);
  const chown = spawnSync('chown', ['-R', `${NOBODY}:${NOBODY}`, dir], { encoding: 'utf8' });
  assert.is(chown.status, 0, chown.stderr);
  chmodSync(queue.paths.job(closedFinished), 0o000);
  chmodSync(queue.paths.job(closedQueued), 0o000);
  chmodSync(queue.paths.gatedJob(held), 0o000);
  return { queue, closedFinished, fineFinished, closedQueued, held };
}

/** Starts `fsjob <args>` in another process (standard input a pipe); `done` resolves once it exited, with its output. */
export function fsjobSpawn(args: string[], options: SpawnOptions = {}): { child: ChildProcess; done: Promise<CliRun>; output: () => CliRun } {
  const argv = [...(options.prefix ?? []), ...FSJOB_ARGV, ...args];
  const child = spawn(argv[0] as string, argv.slice(1), { cwd: options.cwd ?? '/', env: { ...process.env, ...options.env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const watchdog = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const done = once(child, 'close').then(([status, signal]) => {
    clearTimeout(watchdog);
    return { status: status as number | null, signal: signal as NodeJS.Signals | null, stdout, stderr };
  });
  return { child, done, output: () => ({ status: null, signal: null, stdout, stderr }) };
}

/** A crash would print a stack trace ("    at foo (file:line)") or an internal error; a clear refusal does not. */
export function assertNoCrash(run: CliRun, what: string): void {
  assert.is(run.signal, null, `${what} was killed by ${String(run.signal)}: ${run.stderr}`);
  assert.not.match(run.stderr, /\n\s+at .+:\d+:\d+/, `${what} printed a stack trace: ${run.stderr}`);
  assert.not.match(run.stderr, /internal error/, `${what} hit an internal error: ${run.stderr}`);
}

/** Error findings of a whole-queue audit, as text (empty when the queue is clean of errors). */
export async function auditErrors(queue: Queue | string): Promise<string[]> {
  const root = typeof queue === 'string' ? queue : queue.root;
  const audit = await auditQueue(root);
  return audit.findings.filter((finding) => finding.severity === 'error').map((finding) => `${finding.code} [${finding.clause}] ${finding.path}: ${finding.message}`);
}

/** A queue made by `initQueue` in a fresh directory (or under `parent`), and a private working directory for its jobs. */
export async function queueAndCwd(label: string, parent?: string): Promise<{ queue: Queue; cwd: string }> {
  const queue = await initQueue(join(parent ?? (await freshDir(label)), 'q'));
  return { queue, cwd: await freshDir(`${label}-cwd`) };
}

/** Every job directory in jobs/. */
export function jobIds(queue: Pick<Queue, 'paths'>): string[] {
  return readdirSync(queue.paths.dir('jobs')).sort();
}

/**
 * Nothing accepted is lost (I3): after the fault is gone, recover + drain,
 * then every accepted job has exactly one receipt, every job in jobs/ is an
 * accepted one (a failed enqueue left nothing), and validate finds no error.
 */
export async function assertNothingLost(queue: Queue, accepted: readonly string[]): Promise<void> {
  await recover(queue);
  await new Worker({ queues: [queue], mode: 'drain', pollMs: 100 }).run();
  for (const id of accepted) assert.ok(existsSync(queue.paths.jobFile(id, 'receipt.json')), `accepted job ${id} has its receipt`);
  assert.equal(jobIds(queue), [...accepted].sort(), 'jobs/ holds exactly the accepted jobs');
  assert.equal(await auditErrors(queue), [], 'validate finds no error');
}
