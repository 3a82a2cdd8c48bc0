/**
 * The state of the filesystem, which moves every file-creating figure on an
 * ext4 without a journal (this machine's root): for about 60 s after
 * thousands of inodes nearby were deleted, each create scans past the
 * recently freed inodes (ext4's recently_deleted() check, used only without a
 * journal) and costs ~300 µs of kernel CPU instead of ~20 µs. A queue that
 * removes finished jobs runs in that state. Peers are compared only within
 * one state:
 *   fresh          a filesystem made for the group (lib/fresh-fs.ts, the
 *                  default): nothing was deleted on it before the group;
 *   clean          --fs work, after `sync; sleep 62` and with nothing deleted since;
 *   unsettled      --fs work without the settle;
 *   after deletes  right after removing thousands of finished jobs in the
 *                  very queue directory that is then measured.
 */
import { readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { buildQueue } from './fixtures.ts';
import { run } from './proc.ts';

export type FsState = 'fresh' | 'clean' | 'after deletes' | 'unsettled';

export async function settle(log: (line: string) => void, seconds = 62): Promise<void> {
  log(`fs state: sync; sleep ${seconds} (lets ext4 forget recently deleted inodes, so the run starts clean)`);
  await run(['sync']);
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
}

/**
 * Puts the queue at root into the "after deletes" state: builds `jobs`
 * finished jobs in it (7 inodes each), makes them durable, removes them as a
 * garbage collector would, and waits until their deletion time is in the
 * past (the kernel skips only inodes deleted in an earlier second).
 */
export async function deleteNearby(root: string, jobs: number, scratch: string): Promise<void> {
  await buildQueue(root, jobs, 'finished', { handler: 'bench' }, scratch);
  const dir = path.join(root, 'jobs');
  for (const name of readdirSync(dir)) rmSync(path.join(dir, name), { recursive: true, force: true });
  await new Promise((resolve) => setTimeout(resolve, 1100));
}
