/**
 * Where a worker's spawner runs on this host (spawner.ts starts it): the
 * shell that runs spawner.sh, the PATH it finds its tools on, and the
 * directory its FIFOs are made in. Each is chosen once per spawner, from
 * what this host has; none is ever a job's.
 */
import { accessSync, statSync, constants as fsConstants } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The spawner's own PATH: where it finds bash, env, setsid and mkfifo; never a job's. */
export const SPAWNER_PATH = '/usr/local/bin:/usr/bin:/bin';

/**
 * Where the FIFO directory goes: TMPDIR where the user set it, else a
 * memory filesystem (XDG_RUNTIME_DIR, the user's own; /dev/shm, sticky like
 * /tmp), else /tmp. Every attempt makes three FIFOs and removes them; on a
 * disk filesystem each is an inode allocated and freed, which ext4 without
 * a journal makes slow when many were freed lately (measured: 0.7 ms of CPU
 * per attempt on this project's test VM, none on tmpfs).
 */
export function fifoParent(): string {
  if (process.env['TMPDIR']) return os.tmpdir();
  const runtime = process.env['XDG_RUNTIME_DIR'];
  for (const [dir, sticky] of [[runtime, false], ['/dev/shm', true]] as const) {
    if (dir === undefined || !path.isAbsolute(dir)) continue;
    try {
      const st = statSync(dir);
      const ours = sticky ? (st.mode & 0o1000) !== 0 : st.uid === process.getuid?.() && (st.mode & 0o077) === 0;
      if (st.isDirectory() && ours) {
        accessSync(dir, fsConstants.W_OK | fsConstants.X_OK);
        return dir;
      }
    } catch {
      // not there, or not ours to write
    }
  }
  return os.tmpdir();
}

/** The program `name` on the spawner's PATH, by absolute path; undefined where there is none. */
export function onSpawnerPath(name: string): string | undefined {
  for (const dir of SPAWNER_PATH.split(':')) {
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** bash on the spawner's PATH (its job control makes the one-exec chain, spawner.sh), else /bin/sh. */
export function defaultShell(): string {
  return onSpawnerPath('bash') ?? '/bin/sh';
}
