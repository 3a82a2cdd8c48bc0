/**
 * The hostile-input walker of the reliability battery (issue 6).
 *
 * It builds a real queue with the real producer (src/producer) and consumer
 * (src/consumer): finished, failed-after-retry, cancelled, queued jobs with
 * stdin, a lane and a dedupe key, and one job running under a live worker
 * process (a live claim, an exec record, a state record, a workers/
 * registration). That queue is frozen as a golden copy. For each path of it,
 * a fresh copy gets one planted object at that path (a symlink out of the
 * queue, a FIFO, a socket, a hard link to a file outside, a wide mode, a
 * foreign owner), then every fsjob command runs over the copy in this process
 * and the walker records what each did: its exit status, whether stderr
 * holds a stack trace, whether anything outside the queue changed, and which
 * findings `fsjob validate --json` reported.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { chmodSync, chownSync, closeSync, constants, linkSync, lstatSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { tmpdir } from 'node:os';
import { main } from '../../src/cli/main.ts';
import { groupState } from '../../src/model/groups.ts';
import { initQueue, type Queue } from '../../src/model/queue.ts';
import type { ExecRecord, Group } from '../../src/records/codec.ts';
import type { Finding } from '../../src/records/findings.ts';
import { cancel, enqueue, type JobRequest } from '../../src/producer/index.ts';
import { Worker } from '../../src/consumer/index.ts';
import { NOBODY, freshDir, mkfifo, withWatchdog } from './helpers.ts';
import { waitFor } from './consumer.ts';
import { FSJOB_BIN } from './cli.ts';

const BIN = FSJOB_BIN;
/** A command that takes longer than this hangs: the walker fails (never a pass/fail timing). */
export const COMMAND_WATCHDOG_MS = 60_000;

export const VARIANTS = ['symlink-file', 'symlink-dir', 'symlink-dangling', 'symlink-loop', 'fifo', 'socket', 'hardlink', 'wide-mode', 'foreign-owner'] as const;
export type Variant = (typeof VARIANTS)[number];

/** The finding codes `fsjob validate` may give a planted object of each variant, at its path. */
export const EXPECTED_FINDINGS: Record<Variant, readonly string[]> = {
  'symlink-file': ['ENTRY_SYMLINK', 'RECORD_SYMLINK'],
  'symlink-dir': ['ENTRY_SYMLINK', 'RECORD_SYMLINK'],
  'symlink-dangling': ['ENTRY_SYMLINK', 'RECORD_SYMLINK'],
  'symlink-loop': ['ENTRY_SYMLINK', 'RECORD_SYMLINK'],
  fifo: ['ENTRY_WRONG_TYPE', 'RECORD_NOT_REGULAR'],
  socket: ['ENTRY_WRONG_TYPE', 'RECORD_NOT_REGULAR'],
  hardlink: ['ENTRY_HARDLINK'],
  'wide-mode': ['ENTRY_WRITABLE', 'RECORD_MODE'],
  'foreign-owner': ['ENTRY_OWNER', 'RECORD_OWNER'],
};

export interface HostileFixture {
  /** The directory holding everything the walker makes. */
  dir: string;
  /** The frozen queue every variant starts from. */
  golden: string;
  ids: { finished: string; retried: string; cancelled: string; running: string; stdin: string; lane: string; dedupe: string; plain: string };
  /** The running job's process group, recorded by the live worker. */
  runningGroup: Group;
  /** Every path of the golden queue, relative to its root, directories included, sorted. */
  paths: string[];
  /** Which paths are directories. */
  dirs: Set<string>;
  stop(): Promise<void>;
}

async function drain(queue: Queue): Promise<void> {
  await new Worker({ queues: [queue], mode: 'drain', pollMs: 100 }).run();
}

/** Relative paths of every entry under `root` (sorted, depth first). */
export function walk(root: string): { paths: string[]; dirs: Set<string> } {
  const paths: string[] = [];
  const dirs = new Set<string>();
  const visit = (rel: string): void => {
    for (const name of readdirSync(join(root, rel)).sort()) {
      const child = rel === '' ? name : `${rel}/${name}`;
      paths.push(child);
      if (lstatSync(join(root, child)).isDirectory()) {
        dirs.add(child);
        visit(child);
      }
    }
  };
  visit('');
  return { paths, dirs };
}

/**
 * The queue of the walker: jobs in every state, one of them running under a
 * live `fsjob work` process that stays alive until stop().
 */
export async function buildHostileFixture(): Promise<HostileFixture> {
  const dir = await freshDir('fsjob-walker');
  const live = join(dir, 'live');
  const queue = await initQueue(live);
  const cwd = tmpdir();
  const add = async (request: JobRequest): Promise<string> => (await enqueue(queue, request, { cwd })).id;

  const finished = await add({ argv: ['sh', '-c', 'echo out; echo err >&2'], lane: 'deploy' });
  const retried = await add({ argv: ['sh', '-c', 'exit 3'], max_attempts: 2 });
  await drain(queue);
  const cancelled = await add({ argv: ['true'], dedupe: 'old-key' });
  await cancel(queue, cancelled);

  // The live worker: serve mode, one slot, a 3 s lease so a state record appears within a second; it claims the sleeper and stays busy.
  const child: ChildProcess = spawn(process.execPath, [BIN, 'work', '--queue', live, '--concurrency', '1', '--lease', '3'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  if (process.env['WALKER_DEBUG'] !== undefined) child.stderr?.on('data', (chunk: Buffer) => process.stderr.write(chunk));
  else child.stderr?.resume();
  const running = await add({ argv: ['sleep', '86400'], timeout_ms: 86_400_000, lane: 'build' });
  const execPath = join(live, 'jobs', running, 'exec.1.json');
  await waitFor(`the live worker to run ${running}`, () => {
    try {
      return readdirSync(join(live, 'jobs', running)).includes('state.1.json') && readFileSync(execPath).length > 0;
    } catch {
      return false;
    }
  }, 30_000);
  const exec = JSON.parse(readFileSync(execPath, 'utf8')) as ExecRecord;
  if (exec.group === null) throw new Error('the running job recorded no process group');

  // Enqueued while the only slot is busy: they stay queued.
  const stdin = await add({ argv: ['cat'], stdin_text: 'through stdin\n' });
  const lane = await add({ argv: ['true'], lane: 'deploy', priority: 5 });
  const dedupe = await add({ argv: ['true'], dedupe: 'nightly' });
  const plain = await add({ argv: ['true'], priority: -3 });

  // The live worker renews its state and registration meanwhile (by rename): a copy caught
  // mid-publish holds a temporary name, or cp saw one vanish. Copy again until it is clean.
  const golden = join(dir, 'golden');
  let walked: { paths: string[]; dirs: Set<string> } | undefined;
  for (let attempt = 1; walked === undefined; attempt++) {
    rmSync(golden, { recursive: true, force: true });
    const copied = spawnSync('cp', ['-a', live, golden]).status === 0;
    const tree = walk(golden);
    if (copied && !tree.paths.some((path) => basename(path).startsWith('.'))) walked = tree;
    else if (attempt === 10) throw new Error('no clean copy of the live queue in 10 attempts');
  }
  const { paths, dirs } = walked;
  return {
    dir,
    golden,
    ids: { finished, retried, cancelled, running, stdin, lane, dedupe, plain },
    runningGroup: exec.group,
    paths,
    dirs,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL'); // its guardian stops the sleeper (WORKER-2)
        await once(child, 'exit');
      }
    },
  };
}

export function copyTree(from: string, to: string): void {
  const result = spawnSync('cp', ['-a', from, to]);
  if (result.status !== 0) throw new Error(`cp -a ${from} ${to}: ${String(result.stderr)}`);
}

/** A unix socket bound at `path` (the socket file stays after the binder exits). */
export function bindSocket(path: string): void {
  // Bound by its base name from its directory: a sun_path holds at most 107 bytes.
  const result = spawnSync('python3', ['-c', 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])', basename(path)], { cwd: dirname(path) });
  if (result.status !== 0) throw new Error(`binding a socket at ${path}: ${String(result.stderr)}`);
}

/** The outside world a planted object points to: a file, a directory with a file, a hard-link target. */
export interface Outside {
  dir: string;
  file: string;
  subdir: string;
  linkTarget: string;
}

/** An access time no reader leaves behind: with relatime, the first read after it moves it to now. */
const UNREAD = new Date('2000-01-01T00:00:00Z');

export function makeOutside(dir: string): Outside {
  mkdirSync(dir, { mode: 0o700 });
  const file = join(dir, 'sentinel');
  writeFileSync(file, 'sentinel: not part of any queue\n', { mode: 0o600 });
  const subdir = join(dir, 'subdir');
  mkdirSync(subdir, { mode: 0o700 });
  writeFileSync(join(subdir, 'inner'), 'inner sentinel\n', { mode: 0o600 });
  unread(subdir);
  unread(file);
  return { dir, file, subdir, linkTarget: join(dir, 'hardlink-target') };
}

/** Set the access time of everything under `path` to UNREAD. */
export function unread(path: string): void {
  const stats = lstatSync(path);
  if (stats.isDirectory()) for (const name of readdirSync(path)) unread(join(path, name));
  if (stats.isFile() || stats.isDirectory()) utimesSync(path, UNREAD, lstatSync(path).mtime);
}

/**
 * Everything outside, as text: names, kinds, bytes, modes, owners, mtimes,
 * and access times, so a read through a link shows too (the mount is
 * relatime: the first read after an old atime moves it). Reading here would
 * move them as well, so each atime is put back after its read. Link counts
 * and the hard-link target's atime are left out: removing a queue's name of
 * a file and reading it are allowed (SEC-9).
 */
export function snapshot(dir: string): string {
  const lines: string[] = [];
  const visit = (path: string): void => {
    const stats = lstatSync(path);
    const kind = stats.isSymbolicLink() ? 'link' : stats.isDirectory() ? 'dir' : stats.isFile() ? 'file' : 'other';
    const bytes = kind === 'file' ? createHash('sha256').update(readFileSync(path)).digest('hex') : '';
    const children = kind === 'dir' ? readdirSync(path).sort() : [];
    const unread = stats.atimeMs === UNREAD.getTime();
    // Put the atime back; utimes keeps mtime to the millisecond, which is what is compared.
    if (unread) utimesSync(path, UNREAD, stats.mtime);
    const atime = basename(path) === 'hardlink-target' || path === dir ? '' : unread ? 'unread' : 'read';
    lines.push(`${relative(dir, path)} ${kind} ${(stats.mode & 0o7777).toString(8)} ${stats.uid}:${stats.gid} ${Math.floor(stats.mtimeMs)} ${atime} ${stats.size} ${bytes}`);
    for (const name of children) visit(join(path, name));
  };
  visit(dir);
  return lines.join('\n');
}

/**
 * Replace `rel` inside `root` with the planted object of `variant`. Returns
 * false when the variant does not apply (a hard link to a directory).
 */
export function plant(root: string, rel: string, variant: Variant, outside: Outside, isDir: boolean): boolean {
  const path = join(root, rel);
  const replace = (): void => rmSync(path, { recursive: true, force: true });
  switch (variant) {
    case 'symlink-file':
    case 'symlink-dir': {
      // A link to the planted path's own content, copied outside: a reader that follows it
      // finds valid records and a writer writes out of the queue. The other kind of link
      // target (a directory for a file, a file for a directory) is the sentinel.
      const same = (variant === 'symlink-dir') === isDir;
      let target = isDir ? outside.file : outside.subdir;
      if (same) {
        target = join(outside.dir, 'mirror');
        copyTree(path, target);
        unread(target);
      }
      replace();
      symlinkSync(target, path);
      return true;
    }
    case 'symlink-dangling':
      replace();
      symlinkSync(join(outside.dir, 'nothing-here'), path);
      return true;
    case 'symlink-loop':
      replace();
      symlinkSync(basename(path), path); // resolving it gives ELOOP
      return true;
    case 'fifo':
      replace();
      mkfifo(path);
      return true;
    case 'socket':
      replace();
      bindSocket(path);
      return true;
    case 'hardlink': {
      if (isDir) return false;
      // The outside file holds the same bytes, so the planted name reads as a valid record.
      writeFileSync(outside.linkTarget, readFileSync(path), { mode: 0o600 });
      utimesSync(outside.linkTarget, UNREAD, lstatSync(outside.linkTarget).mtime);
      replace();
      linkSync(outside.linkTarget, path);
      return true;
    }
    case 'wide-mode':
      chmodSync(path, isDir ? 0o777 : 0o666);
      return true;
    case 'foreign-owner':
      chownSync(path, NOBODY, NOBODY);
      return true;
  }
}

export interface CommandRun {
  args: string[];
  status: number;
  stdout: string;
  stderr: string;
}

/** Statuses `fsjob` may exit with (src/cli/exit.ts); `wait` adds the job's own codes, which the walker does not run. */
export const DOCUMENTED_STATUSES: ReadonlySet<number> = new Set([0, 1, 2, 3, 4, 75]);

/** A stack frame or the CLI's "internal error" line: an exception escaped a command. */
export function crashed(run: CommandRun): boolean {
  return /internal error/.test(run.stderr) || /^\s+at .+[:(]/m.test(run.stderr);
}

/** Open every FIFO under `root` for writing without blocking: frees a reader stuck in a blocking open. */
function unblockFifos(root: string): void {
  const visit = (path: string): void => {
    let stats;
    try {
      stats = lstatSync(path);
    } catch {
      return;
    }
    if (stats.isFIFO()) {
      try {
        closeSync(openSync(path, constants.O_WRONLY | constants.O_NONBLOCK));
      } catch {
        // no reader: nothing to free
      }
    } else if (stats.isDirectory()) for (const name of readdirSync(path)) visit(join(path, name));
  };
  visit(root);
}

/** Runs `fsjob <args>` in this process, under the watchdog. */
export async function runFsjob(args: string[], root: string): Promise<CommandRun> {
  let stdout = '';
  let stderr = '';
  const status = await withWatchdog(
    COMMAND_WATCHDOG_MS,
    main(args, {
      stdout: (text) => void (stdout += text),
      stderr: (text) => void (stderr += text),
      stdoutBytes: async (bytes) => void (stdout += Buffer.from(bytes).toString()),
    }),
    () => unblockFifos(root),
  );
  return { args, status, stdout, stderr };
}

export interface VariantResult {
  path: string;
  variant: Variant;
  runs: CommandRun[];
  findings: Finding[];
  /** Codes of the findings validate reported at the planted path. */
  reported: string[];
  outsideChanged: boolean;
  runningAlive: boolean;
}

/** The job a planted path belongs to, or undefined for a path outside jobs/. */
export function jobOf(rel: string): string | undefined {
  const parts = rel.split('/');
  return parts[0] === 'jobs' && parts.length >= 2 ? parts[1] : undefined;
}

/**
 * One variant: a fresh copy of the golden queue with `variant` planted at
 * `rel`, then validate, status, status ID, logs ID, recover, cancel ID, work --drain,
 * gc and enqueue over it. Returns undefined when the variant does not apply.
 */
export async function runVariant(fixture: HostileFixture, index: number, rel: string, variant: Variant): Promise<VariantResult | undefined> {
  const base = join(fixture.dir, `v${index}`);
  mkdirSync(base, { mode: 0o700 });
  const root = join(base, 'q');
  copyTree(fixture.golden, root);
  const outside = makeOutside(join(base, 'outside'));
  try {
    if (!plant(root, rel, variant, outside, fixture.dirs.has(rel))) return undefined;
    const before = snapshot(outside.dir);
    const target = jobOf(rel) ?? fixture.ids.stdin;
    const q = ['--queue', root];
    const runs: CommandRun[] = [];
    const validate = await runFsjob(['validate', '--strict', '--json', root], root);
    runs.push(validate);
    let findings: Finding[] = [];
    try {
      findings = (JSON.parse(validate.stdout) as { findings: Finding[] }).findings;
    } catch {
      findings = [];
    }
    for (const args of [
      ['status', ...q],
      ['status', ...q, target],
      ['logs', ...q, target],
      ['logs', '--stderr', ...q, target],
      ['recover', ...q],
      ['cancel', ...q, target],
      ['work', '--drain', ...q],
      ['gc', '--all', ...q],
      ['enqueue', ...q, '--', 'true'],
    ]) {
      runs.push(await runFsjob(args, root));
    }
    const outsideChanged = snapshot(outside.dir) !== before;
    const runningAlive = (await groupState(fixture.runningGroup)) === 'running';
    const reported = findings.filter((finding) => finding.path.replace(/\/+$/, '') === join(root, rel)).map((finding) => finding.code);
    return { path: rel, variant, runs, findings, reported, outsideChanged, runningAlive };
  } finally {
    // Make the copy removable whatever was planted, then remove it.
    spawnSync('chmod', ['-R', 'u+rwX', base]);
    rmSync(base, { recursive: true, force: true });
  }
}
