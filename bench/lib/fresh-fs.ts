/**
 * A fresh filesystem for one group of `npm run bench`: ext4 made by
 * mkfs.ext4 with its defaults (so with a journal, as users have it) in a
 * sparse image file, attached to a loop device and mounted on an empty
 * directory; unmounted, detached and removed when the group ends, fails or
 * is interrupted (SIGINT, SIGTERM, SIGHUP, or the process exiting).
 *
 * Why: a filesystem that has seen nothing makes a group's figures depend on
 * the group alone. The scratch directory on this VM's root filesystem did
 * not: that ext4 has no journal, and only a journal-less ext4 checks, on
 * every create, whether the inode it is about to reuse was freed in the last
 * minute (recently_deleted() in find_inode_bit) and skips past it, so after
 * thousands of deletes a create cost 344-751 µs instead of 15 µs, and two
 * runs on one commit disagreed twofold (bench/README.md, "The filesystem").
 *
 * Choices, each the same for every group and every system in it:
 * - 64 GiB, sparse: mkfs's defaults give that size 4,194,304 inodes and a
 *   512 MiB journal. The scale group's queues (110,000 finished jobs at 7
 *   inodes each, 210,100 queued ones for the backlog and 100,000 for the
 *   memory row at 3 each) took 1,400,430 inodes and 3.8 GiB (`df -i`, `df`
 *   after building them with bench/fill.c), 4.6 GiB of the image; the image
 *   takes only the blocks the group writes. mkfs leaves the journal's blocks
 *   unwritten extents of the image, so the journal's first pass converts
 *   them in the image's filesystem, in the loop device's kernel thread:
 *   2,000 fsyncs of an overwrite cost 4,701 and 4,668 disk writes on a fresh
 *   image against 4,429 with the journal written with zeros first (6% more,
 *   and 1.05 flushes per fsync either way). Every system of a group pays it
 *   alike, so the image is not written beforehand.
 * - `-E lazy_itable_init=0,lazy_journal_init=0`: mkfs initialises the inode
 *   tables and the journal itself, so no ext4lazyinit thread writes during
 *   the measurement.
 * - the loop device reads and writes the image with direct I/O
 *   (`losetup --direct-io=on`): the data sits once in the page cache, the
 *   mounted filesystem's, instead of a second time as the image's pages.
 *   An fsync on the mounted filesystem still reaches the disk: the loop
 *   driver turns the flush it receives into an fsync of the image file, and
 *   the image's ext4 sends the disk a flush on every fsync. Verified on this
 *   VM (kernel 6.18, util-linux 2.38) by counting flushes (field 16 of
 *   /sys/block/<dev>/stat): 1,000 fsyncs of a 600-byte overwrite on the
 *   mounted filesystem took 216 ms and raised the loop device's count by
 *   1,054 and /dev/vda's by 1,054; an idle 216 ms after them, by 0.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, ftruncateSync, mkdirSync, openSync, readFileSync, rmdirSync, rmSync, statfsSync } from 'node:fs';
import path from 'node:path';

export interface FreshFs {
  /** The directory the filesystem is mounted on; every file of the group goes under it. */
  mountpoint: string;
  /** /dev/loopN. */
  device: string;
  image: string;
  /** Whether the loop device does direct I/O on the image (the kernel may refuse it). */
  directIo: boolean;
  /** mkfs's choices for this size, from dumpe2fs -h: inodes, journal size. */
  inodes: number;
  journalMiB: number;
  /** As /proc/mounts shows them. */
  mountOptions: string;
}

/** Bytes of the image: sparse, so only what the group writes takes disk space. */
export const IMAGE_BYTES = 64 * 2 ** 30;

const MKFS = ['mkfs.ext4', '-q', '-F', '-E', 'lazy_itable_init=0,lazy_journal_init=0'];

function sh(argv: readonly string[]): { ok: boolean; out: string; err: string } {
  const r = spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8', timeout: 120_000 });
  return { ok: r.status === 0, out: (r.stdout ?? '').trim(), err: `${(r.stderr ?? '').trim()}${r.error === undefined ? '' : ` ${r.error.message}`}`.trim() };
}

function must(argv: readonly string[]): string {
  const r = sh(argv);
  if (!r.ok) throw new Error(`${argv.join(' ')} failed: ${r.err || r.out || 'no message'}`);
  return r.out;
}

const sleepSync = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/**
 * Filesystems made and not yet removed: what the exit and signal handlers
 * remove. A make is synchronous, so no handler runs in the middle of one.
 */
const live = new Set<FreshFs>();

let handlersInstalled = false;

function installHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  const removeAll = () => {
    for (const fs of [...live]) for (const warning of removeFreshFs(fs)) process.stderr.write(`${warning}\n`);
  };
  process.on('exit', removeAll);
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGHUP', 129]] as const) {
    process.on(signal, () => {
      // The children of the group got the terminal's SIGINT too; removeFreshFs waits for them to let go of the mount.
      process.stderr.write(`\n${signal}: removing the bench's filesystems\n`);
      removeAll();
      process.exit(code);
    });
  }
}

/**
 * Why a fresh filesystem cannot be made here (not root, a program missing,
 * no loop device, a mount refused), or null: checks the programs, then makes
 * one in `dir` and removes it again.
 */
export function freshFsUnavailable(dir: string): string | null {
  if (process.getuid?.() !== 0) return 'not root (losetup and mount need it)';
  for (const program of ['mkfs.ext4', 'dumpe2fs', 'losetup', 'mount', 'umount']) {
    if (spawnSync('sh', ['-c', `command -v ${program}`], { stdio: 'ignore' }).status !== 0) return `${program} is not on PATH (Debian packages e2fsprogs, mount)`;
  }
  try {
    const trial = path.join(dir, `fsjob-bench-${process.pid}-trial`);
    const warnings = removeFreshFs(makeFreshFs(`${trial}.img`, trial, 0));
    return warnings.length === 0 ? null : warnings.join('; ');
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/**
 * Makes a fresh ext4 in `image` (which must not exist) and mounts it on
 * `mountpoint` (made if missing). Throws with the failing command and its
 * message, leaving nothing behind. `needBytes`: what the group may write,
 * checked against the free space where the image goes.
 */
export function makeFreshFs(image: string, mountpoint: string, needBytes: number): FreshFs {
  installHandlers();
  const dir = path.dirname(image);
  const st = statfsSync(dir);
  const free = st.bavail * st.bsize;
  if (free < needBytes) throw new Error(`${dir} has ${(free / 2 ** 30).toFixed(1)} GiB free; the group's image needs up to ${(needBytes / 2 ** 30).toFixed(0)} GiB (--fs-dir DIR puts it elsewhere)`);
  // What is made so far, undone in reverse order when a later step fails.
  const undo: Array<() => void> = [];
  try {
    const fd = openSync(image, 'wx', 0o600);
    undo.push(() => rmSync(image, { force: true }));
    try {
      ftruncateSync(fd, IMAGE_BYTES);
    } finally {
      closeSync(fd);
    }
    must([...MKFS, image]);
    const device = must(['losetup', '--find', '--show', '--direct-io=on', image]);
    undo.push(() => void sh(['losetup', '-d', device]));
    mkdirSync(mountpoint, { recursive: true });
    must(['mount', '-t', 'ext4', device, mountpoint]);
    undo.push(() => void sh(['umount', mountpoint]));
    const fs: FreshFs = { mountpoint, device, image, directIo: loopDirectIo(device), ...mkfsChoices(device), mountOptions: mountOptionsOf(mountpoint) };
    live.add(fs);
    return fs;
  } catch (error) {
    for (const step of undo.reverse()) step();
    throw error;
  }
}

/**
 * Unmounts, detaches and removes `fs` (`keepImage`: all but the image file,
 * which `mount -o loop IMAGE DIR` mounts again). A mount still busy after
 * 10 s (a process of the group that has not exited yet) is detached lazily:
 * the kernel finishes the unmount, and the loop device (marked to clear itself
 * by `losetup -d`) goes, when that process lets go. Returns warnings to print.
 */
export function removeFreshFs(fs: FreshFs, keepImage = false): string[] {
  if (!live.delete(fs)) return [];
  const warnings: string[] = [];
  let unmounted = false;
  let last = '';
  for (let i = 0; i < 50 && !unmounted; i++) {
    const r = sh(['umount', fs.mountpoint]);
    unmounted = r.ok;
    last = r.err;
    if (!unmounted) sleepSync(200);
  }
  if (!unmounted) {
    const lazy = sh(['umount', '--lazy', fs.mountpoint]);
    warnings.push(`umount ${fs.mountpoint}: ${last}; ${lazy.ok ? `detached lazily: ${fs.device} goes when the last process using it exits` : `umount --lazy failed too: ${lazy.err}`}`);
  }
  const detach = sh(['losetup', '-d', fs.device]);
  if (!detach.ok) warnings.push(`losetup -d ${fs.device}: ${detach.err}`);
  if (!keepImage) rmSync(fs.image, { force: true });
  try {
    rmdirSync(fs.mountpoint);
  } catch {
    // Still a mount point (lazy) or not empty: the scratch directory's removal takes it.
  }
  return warnings;
}

function loopDirectIo(device: string): boolean {
  try {
    return readFileSync(`/sys/block/${path.basename(device)}/loop/dio`, 'utf8').trim() === '1';
  } catch {
    return false;
  }
}

function mkfsChoices(device: string): { inodes: number; journalMiB: number } {
  const head = sh(['dumpe2fs', '-h', device]).out;
  const field = (name: string) => new RegExp(`^${name}:\\s*(\\S+)`, 'm').exec(head)?.[1] ?? '';
  return { inodes: Number(field('Inode count')), journalMiB: Number(field('Total journal size').replace(/M$/, '')) };
}

function mountOptionsOf(mountpoint: string): string {
  const line = readFileSync('/proc/mounts', 'utf8')
    .split('\n')
    .map((l) => l.split(' '))
    .find((f) => f[1] === mountpoint);
  return line?.[3] ?? '?';
}
