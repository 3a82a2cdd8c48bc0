/** What the report says about the machine: cores, memory, disk, filesystem, kernel, node, load. */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { IMAGE_BYTES, type FreshFs } from './fresh-fs.ts';
import { run } from './proc.ts';

export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  kernel: string;
  node: string;
  disk: string;
  filesystem: string;
  mountOptions: string;
  writeCache: string;
  journal: string;
  sqlite: string;
}

function read(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return '?';
  }
}

/** Facts about the filesystem that holds dir. */
export async function describeMachine(dir: string, sqliteVersion: string): Promise<Machine> {
  const df = await run(['df', '--output=source,fstype', dir]);
  const [source = '?', fstype = '?'] = (df.stdout.trim().split('\n')[1] ?? '').trim().split(/\s+/);
  const device = source.replace(/^\/dev\//, '');
  const block = device.replace(/p?\d+$/, '') || device;
  const mounts = read('/proc/mounts')
    .split('\n')
    .map((l) => l.split(' '))
    .find((f) => f[0] === source);
  // ext4 shows its jbd2 thread here; '<none>' means the filesystem has no journal.
  const journalTask = read(`/sys/fs/ext4/${device}/journal_task`);
  const journal = fstype !== 'ext4' ? '?' : journalTask === '<none>' ? 'none' : `jbd2 (${journalTask})`;
  const size = Number(read(`/sys/block/${block}/size`)) * 512;
  return {
    cpu: `${os.cpus()[0]?.model ?? '?'}`,
    cores: os.cpus().length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    kernel: `${os.type()} ${os.release()}`,
    node: process.version,
    disk: `${source} (${Number.isFinite(size) ? `${Math.round(size / 2 ** 30)} GiB, ` : ''}rotational=${read(`/sys/block/${block}/queue/rotational`)}, scheduler ${read(`/sys/block/${block}/queue/scheduler`)})`,
    filesystem: fstype,
    mountOptions: mounts?.[3] ?? '?',
    writeCache: read(`/sys/block/${block}/queue/write_cache`),
    journal,
    sqlite: sqliteVersion,
  };
}

/** A group's fresh filesystem as the report names it; the journal as ext4 itself shows it (its jbd2 thread). */
export function describeFreshFs(fs: FreshFs): { filesystem: string; mountOptions: string } {
  const journal = read(`/sys/fs/ext4/${path.basename(fs.device)}/journal_task`);
  const journalText = journal === '<none>' || journal === '?' ? `journal: ${journal === '<none>' ? 'none' : '?'}` : 'journal';
  return {
    filesystem: `ext4 (mkfs defaults, ${journalText}; for ${IMAGE_BYTES / 2 ** 30} GiB: ${fs.inodes.toLocaleString('en-US')} inodes, ${fs.journalMiB} MiB journal) on ${fs.device} over ${fs.image} (sparse, loop direct I/O ${fs.directIo ? 'on' : 'off'}), fresh for this group`,
    mountOptions: fs.mountOptions,
  };
}

/** Load of the machine now: other work on it shifts every figure, so each round records it. */
export function loadNow(): { load1: number; cpuSome60: number; ioSome60: number } {
  const psi = (file: string) => Number(/some avg10=[\d.]+ avg60=([\d.]+)/.exec(read(file))?.[1] ?? Number.NaN);
  return { load1: os.loadavg()[0] ?? Number.NaN, cpuSome60: psi('/proc/pressure/cpu'), ioSome60: psi('/proc/pressure/io') };
}
