/**
 * The bench's fresh filesystem per group (bench/lib/fresh-fs.ts), made for
 * real: an ext4 with its journal on a loop device over an image file, and
 * nothing left behind (no mount, no loop device, no image) after the group,
 * after a make that fails half-way, and after SIGINT to the process holding
 * it. Where one cannot be made (not root, no mkfs.ext4, no loop devices) the
 * tests are skipped with a printed reason.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { freshFsUnavailable, makeFreshFs, removeFreshFs } from '../../bench/lib/fresh-fs.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';

const fresh = suite('bench fresh filesystem');

// Made in the before hook, not at import: the runner imports every file of a
// stream first, and another file's cleanupAll() removes what freshDir made.
let dir = '';
let missing: string | null = null;
fresh.before(async () => {
  dir = await freshDir('fresh-fs');
  missing = freshFsUnavailable(dir);
  if (missing !== null) console.log(`bench/fresh-fs: skipped: ${missing}`);
});

/** Loop devices whose backing file is `image` (the kernel appends " (deleted)" once it is unlinked). */
function loopsOver(image: string): string[] {
  return readdirSync('/sys/block')
    .filter((name) => name.startsWith('loop'))
    .filter((name) => {
      try {
        return readFileSync(`/sys/block/${name}/loop/backing_file`, 'utf8').trim().replace(/ \(deleted\)$/, '') === image;
      } catch {
        return false;
      }
    });
}

const mountedOn = (mountpoint: string): string[][] =>
  readFileSync('/proc/mounts', 'utf8')
    .split('\n')
    .map((line) => line.split(' '))
    .filter((f) => f[1] === mountpoint);

function assertGone(image: string, mountpoint: string): void {
  assert.equal(mountedOn(mountpoint), [], `${mountpoint} is still mounted`);
  assert.equal(loopsOver(image), [], `a loop device still reads ${image}`);
  assert.not.ok(existsSync(image), `${image} is still there`);
}

fresh.after(cleanupAll);

fresh('a group writes to an ext4 with a journal on its own loop device, and removing it leaves nothing', () => {
  if (missing !== null) return;
  const image = join(dir, 'a.img');
  const mountpoint = join(dir, 'a');
  const fs = makeFreshFs(image, mountpoint, 0);
  try {
    const [mount] = mountedOn(mountpoint);
    assert.equal(mount?.slice(0, 3), [fs.device, mountpoint, 'ext4']);
    assert.equal(loopsOver(image), [fs.device.replace('/dev/', '')]);
    // ext4 names its journal thread here; '<none>' would mean no journal.
    assert.match(readFileSync(`/sys/fs/ext4/${fs.device.replace('/dev/', '')}/journal_task`, 'utf8'), /^\d+/);
    assert.ok(fs.inodes >= 4_000_000, `only ${fs.inodes} inodes`);
    writeFileSync(join(mountpoint, 'job'), 'x');
    assert.equal(statSync(join(mountpoint, 'job')).dev, statSync(mountpoint).dev);
    assert.ok(statSync(mountpoint).dev !== statSync(dir).dev, 'the mount point is on the scratch directory\'s filesystem');
  } finally {
    assert.equal(removeFreshFs(fs), []);
  }
  assertGone(image, mountpoint);
  assert.not.ok(existsSync(mountpoint));
});

fresh('a make that fails after the loop device is attached undoes the device and the image', () => {
  if (missing !== null) return;
  const image = join(dir, 'b.img');
  const notADirectory = join(dir, 'b-file');
  writeFileSync(notADirectory, '');
  // The mount point is a file: making it fails after losetup.
  assert.throws(() => makeFreshFs(image, notADirectory, 0), /EEXIST/);
  assertGone(image, notADirectory);
  assert.throws(() => makeFreshFs(image, join(dir, 'b'), 2 ** 60), /GiB free/);
  assert.not.ok(existsSync(image));
});

fresh('SIGINT to the process holding a fresh filesystem unmounts, detaches and removes it', async () => {
  if (missing !== null) return;
  const image = join(dir, 'c.img');
  const mountpoint = join(dir, 'c');
  const module = new URL('../../bench/lib/fresh-fs.ts', import.meta.url).href;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', `const m = await import(${JSON.stringify(module)}); m.makeFreshFs(${JSON.stringify(image)}, ${JSON.stringify(mountpoint)}, 0); console.log('READY'); setInterval(() => {}, 1000);`], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('READY') && resolve());
    child.on('exit', (code) => reject(new Error(`the child exited ${code} before READY: ${stderr}`)));
  });
  try {
    assert.equal(mountedOn(mountpoint).length, 1);
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    child.kill('SIGINT');
    assert.equal(await exited, 130, stderr);
    assertGone(image, mountpoint);
  } finally {
    // A failure here must not leave a mount on the machine for the next test.
    if (mountedOn(mountpoint).length > 0) spawnSync('umount', ['--lazy', mountpoint]);
    for (const loop of loopsOver(image)) spawnSync('losetup', ['-d', `/dev/${loop}`]);
  }
});

fresh.run();
