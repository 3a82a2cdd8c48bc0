/**
 * The cgroup stop (spec EXEC-16, `fsjob work --cgroup DIR`, and by default
 * `--cgroup auto`: the worker's own cgroup when it is delegated): a process
 * that leaves its job's process group (setsid, a daemon's double fork) is out
 * of reach of every group signal, but not out of its control group. Given a
 * cgroup v2 directory it may create children in, a consumer puts each
 * attempt's gate into DIR/fsjob-<job id>-<gen> before releasing it (EXEC-2),
 * so the command and everything it forks start there; when the attempt ends
 * it kills whatever is left in that cgroup and removes the directory.
 *
 * The records still name only the process group: the cgroup is this
 * consumer's own means, not part of the protocol, and its stop happens after
 * the group's (EXEC-11), so it can only add to what the protocol stops.
 */
import { constants as fsConstants } from 'node:fs';
import { access, mkdir, readFile, rmdir, stat, statfs, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { FsjobError, errnoOf } from '../base/errors.ts';
import { deadlineIn, type Clock } from '../base/clock.ts';

/** statfs f_type of a cgroup v2 filesystem (linux/magic.h). */
const CGROUP2_SUPER_MAGIC = 0x63677270;
/** How long the stop waits for the cgroup to empty after SIGKILL. */
export const CGROUP_STOP_LIMIT = 5000;
const POLL_MS = 20;

/** A cgroup v2 directory this consumer may create one child per attempt in. */
export interface CgroupBase {
  readonly dir: string;
}

const refuse = (dir: string, reason: string, code: 'USAGE' | 'IO' = 'USAGE', errno?: string): FsjobError =>
  new FsjobError(code, `--cgroup ${dir}: ${reason}; --cgroup needs a cgroup v2 directory this worker may create children in (fsjob work --help says how to get one)`, {
    clause: 'EXEC-16',
    path: dir,
    ...(errno === undefined ? {} : { errno }),
  });

/**
 * Checks `dir` before any command runs: a directory on a cgroup v2
 * filesystem, with cgroup.procs, that this process can create a child in and
 * move a process into (a probe child is made and removed). The guardian reads
 * the path as one word, so white space in it is refused.
 */
export async function openCgroupBase(given: string): Promise<CgroupBase> {
  const dir = resolve(given);
  if (/\s/.test(dir)) throw refuse(dir, 'the path contains white space');
  try {
    if (!(await stat(dir)).isDirectory()) throw refuse(dir, 'not a directory');
    if ((await statfs(dir)).type !== CGROUP2_SUPER_MAGIC) throw refuse(dir, 'not on a cgroup v2 filesystem (cgroup2)');
  } catch (error) {
    if (error instanceof FsjobError) throw error;
    if (errnoOf(error) === 'ENOENT' || errnoOf(error) === 'ENOTDIR') throw refuse(dir, 'does not exist');
    throw refuse(dir, `cannot be read (${errnoOf(error) ?? String(error)})`, 'IO', errnoOf(error));
  }
  try {
    await access(join(dir, 'cgroup.procs'), fsConstants.W_OK);
    await access(dir, fsConstants.W_OK);
  } catch (error) {
    throw refuse(dir, `has no writable cgroup.procs or is not writable (${errnoOf(error) ?? String(error)}): the directory must be delegated to this user`, 'IO', errnoOf(error));
  }
  const probe = join(dir, `fsjob-probe-${process.pid}`);
  try {
    await mkdir(probe);
  } catch (error) {
    if (errnoOf(error) !== 'EEXIST') throw refuse(dir, `cannot create a child cgroup in it (${errnoOf(error) ?? String(error)})`, 'IO', errnoOf(error));
  }
  try {
    await access(join(probe, 'cgroup.procs'), fsConstants.W_OK);
  } catch (error) {
    throw refuse(dir, `a child cgroup's cgroup.procs is not writable (${errnoOf(error) ?? String(error)})`, 'IO', errnoOf(error));
  } finally {
    await rmdir(probe).catch(() => undefined);
  }
  return { dir };
}

/** Where the cgroup v2 hierarchy is mounted: /sys/fs/cgroup (unified), else /sys/fs/cgroup/unified (hybrid). */
async function cgroup2Mount(): Promise<string | undefined> {
  for (const dir of ['/sys/fs/cgroup', '/sys/fs/cgroup/unified']) {
    try {
      if ((await statfs(dir)).type === CGROUP2_SUPER_MAGIC) return dir;
    } catch {
      // not mounted there
    }
  }
  return undefined;
}

/**
 * `fsjob work --cgroup auto`, the default (issue 28 point 5): the worker's
 * own cgroup v2 directory, when it is delegated to the worker. Delegated
 * means what systemd's Delegate=yes (or an administrator's chown) does: the
 * worker is not root and the directory is owned by its uid; then a child is
 * made and joined there as openCgroupBase probes. Root gets no automatic
 * cgroup: it may write anywhere in the hierarchy, including directories a
 * service manager owns, so only the operator knows which subtree is its own
 * (`--cgroup DIR`). The base, or why containment is off.
 */
export async function delegatedCgroup(): Promise<{ base: CgroupBase } | { off: string }> {
  const mount = await cgroup2Mount();
  if (mount === undefined) return { off: 'this system has no cgroup v2 hierarchy' };
  let own: string | undefined;
  try {
    own = /^0::(\/.*)$/m.exec(await readFile('/proc/self/cgroup', 'latin1'))?.[1];
  } catch {
    own = undefined;
  }
  if (own === undefined) return { off: 'this process is in no cgroup v2 group (/proc/self/cgroup)' };
  const dir = join(mount, own);
  const uid = process.getuid?.();
  if (uid === 0) return { off: `running as root, which may write anywhere in the cgroup tree: --cgroup DIR names the subtree that is this worker's` };
  try {
    if ((await stat(dir)).uid !== uid) return { off: `its cgroup ${dir} is not delegated to this user (not owned by uid ${String(uid)}; systemd's Delegate=yes makes it so)` };
    return { base: await openCgroupBase(dir) };
  } catch (error) {
    return { off: `its cgroup ${dir} cannot be used (${error instanceof Error ? error.message : String(error)})` };
  }
}

/** What stopping an attempt's cgroup came to. */
export interface CgroupStop {
  /** Processes outside the command's process group that the cgroup stop killed. */
  outside: number;
  /** Processes still in the cgroup after CGROUP_STOP_LIMIT (the directory is then left in place). */
  left: number;
  path: string;
}

/** The cgroup of one attempt: DIR/fsjob-<job id>-<gen>. */
export class AttemptCgroup {
  readonly path: string;
  private readonly killFile: boolean;

  /** `killFile: false` kills pid by pid as on a kernel before 5.14 (no cgroup.kill); a test forces that path with it. */
  constructor(base: CgroupBase, jobId: string, gen: number, options: { killFile?: boolean } = {}) {
    this.path = join(base.dir, `fsjob-${jobId}-${gen}`);
    this.killFile = options.killFile ?? true;
  }

  /** Creates the cgroup and moves `pid` (the gate, not yet released) into it: everything it forks starts there. */
  async adopt(pid: number): Promise<void> {
    try {
      await mkdir(this.path).catch((error: unknown) => {
        if (errnoOf(error) !== 'EEXIST') throw error;
      });
      await writeFile(join(this.path, 'cgroup.procs'), `${pid}\n`);
    } catch (error) {
      throw new FsjobError('IO', `could not move the command's gate (pid ${pid}) into cgroup ${this.path}: ${errnoOf(error) ?? String(error)}; the command did not run`, {
        clause: 'EXEC-16',
        path: this.path,
        ...(errnoOf(error) === undefined ? {} : { errno: errnoOf(error) as string }),
      });
    }
  }

  /** The pids in the cgroup now (zombies are not listed); empty once it is gone. */
  async pids(): Promise<number[]> {
    try {
      return (await readFile(join(this.path, 'cgroup.procs'), 'latin1')).split('\n').filter((line) => line !== '').map(Number);
    } catch {
      return [];
    }
  }

  /**
   * Kills every process left in the cgroup (cgroup.kill where the kernel has
   * it, else SIGKILL to each listed pid until none is listed), waits at most
   * CGROUP_STOP_LIMIT for it to empty and removes it. `pgid` is the command's
   * group: what is counted as `outside` is every other process found.
   */
  async stop(pgid: number, clock: Clock): Promise<CgroupStop> {
    const found = await this.pids();
    const outside = new Set<number>();
    for (const pid of found) if ((await pgidOf(pid)) !== pgid) outside.add(pid);
    const passed = deadlineIn(clock, CGROUP_STOP_LIMIT);
    let remaining = found;
    if (remaining.length > 0) {
      const killFile = join(this.path, 'cgroup.kill');
      let useKillFile = this.killFile && (await writeFile(killFile, '1\n').then(() => true, () => false));
      for (;;) {
        remaining = await this.pids();
        if (remaining.length === 0 || passed()) break;
        for (const pid of remaining) {
          // A process that forked after the first listing, or a kernel without cgroup.kill.
          if (!outside.has(pid) && (await pgidOf(pid)) !== pgid) outside.add(pid);
          if (!useKillFile) signalQuietly(pid);
        }
        if (useKillFile) useKillFile = await writeFile(killFile, '1\n').then(() => true, () => false);
        await clock.sleep(POLL_MS);
      }
    }
    if (remaining.length === 0) await removeDir(this.path, clock, passed);
    return { outside: outside.size, left: remaining.length, path: this.path };
  }
}

/** rmdir, retried while the kernel still counts the killed tasks (EBUSY), until the deadline has `passed`. */
async function removeDir(path: string, clock: Clock, passed: () => boolean): Promise<void> {
  for (;;) {
    try {
      await rmdir(path);
      return;
    } catch (error) {
      if (errnoOf(error) !== 'EBUSY' || passed()) return;
    }
    await clock.sleep(POLL_MS);
  }
}

async function pgidOf(pid: number): Promise<number | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'latin1');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[2]);
  } catch {
    return undefined;
  }
}

function signalQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // ESRCH: gone already
  }
}

/**
 * What the receipt says of processes outside the command's group, when
 * anything: how many the cgroup stop killed (EXEC-16), and that one kept an
 * output open past the drain (EXEC-12).
 */
export function outsideNote(result: { drainCut: boolean; cgroup: CgroupStop | null }): { note?: string } {
  const notes: string[] = [];
  const stop = result.cgroup;
  const n = (count: number): string => `${count} process${count === 1 ? '' : 'es'}`;
  if (stop !== null && stop.outside > 0) notes.push(`${n(stop.outside)} outside the command's group (setsid, a daemon) stopped through cgroup ${stop.path} (EXEC-16)`);
  if (stop !== null && stop.left > 0) notes.push(`${n(stop.left)} still in cgroup ${stop.path} after SIGKILL (EXEC-16)`);
  if (result.drainCut) notes.push(`a process outside the command's group kept an output open after the group ended; the output totals are unknown (EXEC-12, EXEC-16)`);
  return notes.length === 0 ? {} : { note: notes.join('; ') };
}
