import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import * as fsp from 'node:fs/promises';
import { constants, fstatSync, lstatSync, readdirSync } from 'node:fs';
import type { Dirent } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { join } from 'node:path';
import { checkDirInside, checkQueueRoot, createExclusive, ensurePrivateDir, fsyncDir, isTempName, listDir, publishRecord, readBounded, removeTree, renameNoReplace } from '../../src/fs/safefs.ts';
import { realReads, type ReadCalls, type SafeFsSeam } from '../../src/fs/safefs.ts';
import { NOBODY, cleanupAll, dotFiles, freshDir, mkfifo, rejectsWith, withWatchdog } from '../support/helpers.ts';
import { RECORD_MAX, STDIN_MAX } from '../../src/base/constants.ts';

const OUTSIDE_CONTENT = 'outside: must never change\n';

/** A queue-like root plus a file and a directory outside it for links to aim at. */
async function arena(): Promise<{ root: string; outsideFile: string; outsideDir: string }> {
  const root = await freshDir('safefs-q');
  const elsewhere = await freshDir('safefs-out');
  const outsideFile = join(elsewhere, 'victim.txt');
  await fsp.writeFile(outsideFile, OUTSIDE_CONTENT, { mode: 0o600 });
  const outsideDir = join(elsewhere, 'victim-dir');
  await fsp.mkdir(outsideDir, { mode: 0o700 });
  return { root, outsideFile, outsideDir };
}

/** The three symlink shapes every primitive must refuse. */
function linkTargets(outsideFile: string, outsideDir: string): Array<[string, string]> {
  return [
    ['to a file outside', outsideFile],
    ['to a directory outside', outsideDir],
    ['dangling', join(outsideDir, 'does-not-exist')],
  ];
}

async function assertOutsideUntouched(outsideFile: string, outsideDir: string): Promise<void> {
  assert.is(await fsp.readFile(outsideFile, 'utf8'), OUTSIDE_CONTENT);
  assert.equal(await fsp.readdir(outsideDir), []);
}

function modeOf(stats: { mode: number }): number {
  return stats.mode & 0o7777;
}

function errnoError(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: injected`), { code });
}

async function withUmask<T>(mask: number, work: () => Promise<T>): Promise<T> {
  const previous = process.umask(mask);
  try {
    return await work();
  } finally {
    process.umask(previous);
  }
}

async function listenUnixSocket(path: string): Promise<Server> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, resolve);
  });
  return server;
}

// ---------------------------------------------------------------- checkQueueRoot
const queueRoot = suite('checkQueueRoot');
queueRoot.after(cleanupAll);

queueRoot('accepts a private directory of ours', async () => {
  const root = await freshDir();
  await checkQueueRoot(root);
});

queueRoot('refuses a symlinked root, a foreign owner and mode 0777 with UNSAFE_QUEUE', async () => {
  const real = await freshDir();
  const holder = await freshDir();
  const link = join(holder, 'q');
  await fsp.symlink(real, link);
  await rejectsWith(checkQueueRoot(link), 'UNSAFE_QUEUE', { clause: 'SEC-1', path: link });

  const foreign = await freshDir();
  await fsp.chown(foreign, NOBODY, NOBODY);
  await rejectsWith(checkQueueRoot(foreign), 'UNSAFE_QUEUE', { clause: 'SEC-1', path: foreign });

  const open = await freshDir();
  await fsp.chmod(open, 0o777);
  await rejectsWith(checkQueueRoot(open), 'UNSAFE_QUEUE', { clause: 'SEC-1' });
  await fsp.chmod(open, 0o720);
  await rejectsWith(checkQueueRoot(open), 'UNSAFE_QUEUE', { clause: 'SEC-1' });
});

queueRoot('refuses a regular file as root and reports a missing root as NOT_A_QUEUE', async () => {
  const dir = await freshDir();
  const file = join(dir, 'file');
  await fsp.writeFile(file, 'x', { mode: 0o600 });
  await rejectsWith(checkQueueRoot(file), 'UNSAFE_QUEUE', { clause: 'SEC-1' });
  await rejectsWith(checkQueueRoot(join(dir, 'missing')), 'NOT_A_QUEUE');
});

queueRoot.run();

// ---------------------------------------------------------------- ensurePrivateDir
const privateDir = suite('ensurePrivateDir');
privateDir.after(cleanupAll);

privateDir('creates 0700 under umask 0 and under umask 0277', async () => {
  const root = await freshDir();
  const loose = join(root, 'loose');
  const tight = join(root, 'tight');
  assert.is(await withUmask(0, () => ensurePrivateDir(loose)), true);
  assert.is(await withUmask(0o277, () => ensurePrivateDir(tight)), true);
  assert.is(modeOf(await fsp.lstat(loose)), 0o700);
  assert.is(modeOf(await fsp.lstat(tight)), 0o700);
});

privateDir('accepts an existing private directory and reports it was not created', async () => {
  const root = await freshDir();
  const dir = join(root, 'jobs');
  await ensurePrivateDir(dir);
  assert.is(await ensurePrivateDir(dir, { root }), false);
});

privateDir('refuses a symlink, a wide mode, a foreign owner and a file at the name', async () => {
  const { root, outsideFile, outsideDir } = await arena();
  for (const [label, target] of linkTargets(outsideFile, outsideDir)) {
    const link = join(root, `link-${label.replace(/ /g, '-')}`);
    await fsp.symlink(target, link);
    await rejectsWith(ensurePrivateDir(link), 'SYMLINK_REFUSED', { clause: 'SEC-2', path: link });
  }
  const wide = join(root, 'wide');
  await fsp.mkdir(wide);
  await fsp.chmod(wide, 0o777);
  await rejectsWith(ensurePrivateDir(wide), 'UNSAFE_MODE', { clause: 'SEC-5', path: wide });
  const foreign = join(root, 'foreign');
  await fsp.mkdir(foreign, { mode: 0o700 });
  await fsp.chown(foreign, NOBODY, NOBODY);
  await rejectsWith(ensurePrivateDir(foreign), 'FOREIGN_OWNER', { clause: 'SEC-6', path: foreign });
  const file = join(root, 'file');
  await fsp.writeFile(file, '', { mode: 0o600 });
  await rejectsWith(ensurePrivateDir(file), 'NOT_REGULAR', { clause: 'SEC-3' });
  await assertOutsideUntouched(outsideFile, outsideDir);
});

privateDir('with a root, refuses to create through a symlinked parent', async () => {
  const { root, outsideFile, outsideDir } = await arena();
  const parent = join(root, 'jobs');
  await fsp.symlink(outsideDir, parent);
  await rejectsWith(ensurePrivateDir(join(parent, 'new'), { root }), 'SYMLINK_REFUSED', { path: parent });
  await assertOutsideUntouched(outsideFile, outsideDir);
});

privateDir.run();

// ---------------------------------------------------------------- checkDirInside
const dirInside = suite('checkDirInside');
dirInside.after(cleanupAll);

dirInside('accepts a private directory chain', async () => {
  const root = await freshDir();
  await ensurePrivateDir(join(root, 'a'));
  await ensurePrivateDir(join(root, 'a', 'b'));
  await checkDirInside(join(root, 'a', 'b'), { root });
});

dirInside('refuses a symlinked directory at the last and at an inner position', async () => {
  const { root, outsideDir } = await arena();
  await fsp.symlink(outsideDir, join(root, 'a'));
  await rejectsWith(checkDirInside(join(root, 'a')), 'SYMLINK_REFUSED', { path: join(root, 'a') });
  // Only the chain walk (root given) sees a link two levels up.
  await fsp.mkdir(join(outsideDir, 'b'), { mode: 0o700 });
  await rejectsWith(checkDirInside(join(root, 'a', 'b'), { root }), 'SYMLINK_REFUSED', { path: join(root, 'a') });
  await fsp.rmdir(join(outsideDir, 'b'));
});

dirInside('refuses a file, a wide mode, a foreign owner, a path outside the root', async () => {
  const root = await freshDir();
  await fsp.writeFile(join(root, 'f'), '', { mode: 0o600 });
  await rejectsWith(checkDirInside(join(root, 'f')), 'NOT_REGULAR', { clause: 'SEC-3' });
  await fsp.mkdir(join(root, 'wide'));
  await fsp.chmod(join(root, 'wide'), 0o757);
  await rejectsWith(checkDirInside(join(root, 'wide')), 'UNSAFE_MODE', { clause: 'SEC-5' });
  await fsp.mkdir(join(root, 'theirs'), { mode: 0o700 });
  await fsp.chown(join(root, 'theirs'), NOBODY, NOBODY);
  await rejectsWith(checkDirInside(join(root, 'theirs')), 'FOREIGN_OWNER', { clause: 'SEC-6' });
  await rejectsWith(checkDirInside('/etc', { root }), 'USAGE');
  await rejectsWith(checkDirInside(join(root, 'missing')), 'NOT_FOUND');
});

dirInside.run();

// ---------------------------------------------------------------- readBounded
const reading = suite('readBounded');
reading.after(cleanupAll);

reading('reads a private regular file, up to exactly the bound', async () => {
  const root = await freshDir();
  const path = join(root, 'r.json');
  await fsp.writeFile(path, '{"a":1}', { mode: 0o600 });
  assert.is((await readBounded(path, RECORD_MAX)).toString(), '{"a":1}');
  assert.is((await readBounded(path, 7)).length, 7);
  await rejectsWith(readBounded(path, 6), 'TOO_LARGE', { clause: 'SEC-4', path });
});

reading('reports a missing file as NOT_FOUND, or undefined when allowed', async () => {
  const root = await freshDir();
  const path = join(root, 'absent');
  await rejectsWith(readBounded(path, 10), 'NOT_FOUND', { path });
  assert.is(await readBounded(path, 10, { allowMissing: true }), undefined);
});

reading('refuses a symlink at the file position (file, dir, dangling)', async () => {
  const { root, outsideFile, outsideDir } = await arena();
  for (const [label, target] of linkTargets(outsideFile, outsideDir)) {
    const link = join(root, 'record.json');
    await fsp.symlink(target, link);
    await rejectsWith(readBounded(link, RECORD_MAX), 'SYMLINK_REFUSED', { clause: 'SEC-2', path: link });
    await rejectsWith(readBounded(link, RECORD_MAX, { allowMissing: true }), 'SYMLINK_REFUSED');
    await fsp.unlink(link);
    assert.ok(label);
  }
});

reading('refuses a symlink at the parent directory position (dir, file, dangling)', async () => {
  const { root, outsideFile, outsideDir } = await arena();
  await fsp.writeFile(join(outsideDir, 'record.json'), 'secret', { mode: 0o600 });
  const parent = join(root, 'jobs');
  for (const [, target] of linkTargets(outsideFile, outsideDir)) {
    await fsp.symlink(target, parent);
    await rejectsWith(readBounded(join(parent, 'record.json'), RECORD_MAX), 'SYMLINK_REFUSED', { path: parent });
    await fsp.unlink(parent);
  }
});

reading('refuses a FIFO promptly without blocking', async () => {
  const root = await freshDir();
  const fifo = join(root, 'record.json');
  mkfifo(fifo);
  const started = Date.now();
  const unblock = (): void => {
    // Opening the write end releases a reader stuck in a blocking open.
    void fsp.open(fifo, constants.O_WRONLY | constants.O_NONBLOCK).then((h) => h.close()).catch(() => undefined);
  };
  await withWatchdog(5000, rejectsWith(readBounded(fifo, RECORD_MAX), 'NOT_REGULAR', { clause: 'SEC-3' }), unblock);
  assert.ok(Date.now() - started < 1000, 'refused promptly');
});

reading('a FIFO behind a regular-looking lstat is caught by fstat, without blocking', async () => {
  const root = await freshDir();
  const path = join(root, 'record.json');
  mkfifo(path);
  // The seam makes the lstat of the FIFO claim a regular file (same dev/ino),
  // as if the swap happened right after it: only the fstat can catch it.
  const disguise = <T extends { mode: number }>(stats: T): T =>
    Object.assign(Object.create(Object.getPrototypeOf(stats)), stats, {
      mode: (stats.mode & ~constants.S_IFMT) | constants.S_IFREG,
    });
  const seam: SafeFsSeam = {
    ...fsp,
    reads: { ...realReads, lstat: (p: string) => (p === path ? disguise(lstatSync(p)) : lstatSync(p)) },
  };
  const unblock = (): void => {
    void fsp.open(path, constants.O_WRONLY | constants.O_NONBLOCK).then((h) => h.close()).catch(() => undefined);
  };
  await withWatchdog(5000, rejectsWith(readBounded(path, 100, { fs: seam }), 'NOT_REGULAR', { clause: 'SEC-3' }), unblock);
});

reading('a file replaced between lstat and open (other dev/ino) is re-examined, never trusted', async () => {
  const root = await freshDir();
  const path = join(root, 'record.json');
  await fsp.writeFile(path, 'old', { mode: 0o600 });
  const old = await fsp.lstat(path);
  // Keep the old inode alive so the new file cannot reuse its number.
  await fsp.rename(path, join(root, 'old'));
  await fsp.writeFile(path, 'new', { mode: 0o600 });
  let lies = 1;
  const seam: SafeFsSeam = {
    ...fsp,
    reads: { ...realReads, lstat: (p: string) => (p === path && lies-- > 0 ? old : lstatSync(p)) },
  };
  assert.is((await readBounded(path, 100, { fs: seam })).toString(), 'new');
  // A file that keeps changing identity is reported, not read.
  const alwaysOld: SafeFsSeam = {
    ...fsp,
    reads: { ...realReads, lstat: (p: string) => (p === path ? old : lstatSync(p)) },
  };
  await rejectsWith(readBounded(path, 100, { fs: alwaysOld }), 'IO', { errno: 'EAGAIN' });
});

reading('refuses a directory and a socket where a file belongs', async () => {
  const root = await freshDir();
  await fsp.mkdir(join(root, 'dir.json'), { mode: 0o700 });
  await rejectsWith(readBounded(join(root, 'dir.json'), 100), 'NOT_REGULAR', { clause: 'SEC-3' });
  const socketPath = join(root, 'sock');
  const server = await listenUnixSocket(socketPath);
  try {
    await rejectsWith(readBounded(socketPath, 100), 'NOT_REGULAR', { clause: 'SEC-3' });
  } finally {
    server.close();
  }
});

reading('refuses a 50 MB file promptly with TOO_LARGE', async () => {
  const root = await freshDir();
  const path = join(root, 'big.json');
  const handle = await fsp.open(path, 'w', 0o600);
  await handle.write(Buffer.alloc(50 * 1024 * 1024, 0x61));
  await handle.close();
  const started = Date.now();
  await rejectsWith(readBounded(path, RECORD_MAX), 'TOO_LARGE', { clause: 'SEC-4', path });
  assert.ok(Date.now() - started < 500, 'refused without reading');
  // Under the stdin bound it is fine.
  assert.is((await readBounded(path, STDIN_MAX)).length, 50 * 1024 * 1024);
});

reading('catches a file that grows after fstat by reading at most bound+1 bytes', async () => {
  const root = await freshDir();
  const path = join(root, 'growing');
  await fsp.writeFile(path, Buffer.alloc(4096, 0x62), { mode: 0o600 });
  // Both stat calls report the size the file had "before it grew".
  const shrink = <T extends { size: number }>(stats: T): T => Object.assign(Object.create(Object.getPrototypeOf(stats)), stats, { size: 10 });
  const seam: SafeFsSeam = {
    ...fsp,
    reads: { ...realReads, lstat: (p: string) => shrink(lstatSync(p)), fstat: (fd: number) => shrink(fstatSync(fd)) },
  };
  await rejectsWith(readBounded(path, 100, { fs: seam }), 'TOO_LARGE', { clause: 'SEC-4' });
});

reading('refuses a 0666 file with UNSAFE_MODE and a foreign file with FOREIGN_OWNER', async () => {
  const root = await freshDir();
  const wide = join(root, 'wide.json');
  await fsp.writeFile(wide, '{}');
  await fsp.chmod(wide, 0o666);
  await rejectsWith(readBounded(wide, 100), 'UNSAFE_MODE', { clause: 'SEC-5', path: wide });
  const theirs = join(root, 'theirs.json');
  await fsp.writeFile(theirs, '{}', { mode: 0o600 });
  await fsp.chown(theirs, NOBODY, NOBODY);
  await rejectsWith(readBounded(theirs, 100), 'FOREIGN_OWNER', { clause: 'SEC-6', path: theirs });
});

reading('refuses when the parent directory is group-writable or foreign', async () => {
  const root = await freshDir();
  const jobs = join(root, 'jobs');
  await fsp.mkdir(jobs, { mode: 0o700 });
  await fsp.writeFile(join(jobs, 'r'), '{}', { mode: 0o600 });
  await fsp.chmod(jobs, 0o770);
  await rejectsWith(readBounded(join(jobs, 'r'), 100), 'UNSAFE_MODE', { path: jobs });
  await fsp.chmod(jobs, 0o700);
  await fsp.chown(jobs, NOBODY, NOBODY);
  await rejectsWith(readBounded(join(jobs, 'r'), 100), 'FOREIGN_OWNER', { path: jobs });
});

reading.run();

// ---------------------------------------------------------------- publishRecord
const publishing = suite('publishRecord');
publishing.after(cleanupAll);

publishing('links a record 0600 (even under umask 0) and leaves no temp file', async () => {
  const root = await freshDir();
  const target = await withUmask(0, () => publishRecord(root, 'job.json', '{"v":1}', 'link'));
  assert.is(target, join(root, 'job.json'));
  assert.is(await fsp.readFile(target, 'utf8'), '{"v":1}');
  assert.is(modeOf(await fsp.lstat(target)), 0o600);
  assert.equal(await dotFiles(root), []);
  assert.is((await fsp.lstat(target)).nlink, 1, 'temp name unlinked');
});

publishing('a second link publish is EXISTS; the first content survives and no temp is left', async () => {
  const root = await freshDir();
  await publishRecord(root, 'claim.json', 'first', 'link');
  await rejectsWith(publishRecord(root, 'claim.json', 'second', 'link'), 'EXISTS', {
    clause: 'PUB-3',
    path: join(root, 'claim.json'),
  });
  assert.is(await fsp.readFile(join(root, 'claim.json'), 'utf8'), 'first');
  assert.equal(await dotFiles(root), []);
});

publishing('link placement is the arbiter: losing the race after the pre-check is EXISTS too', async () => {
  const root = await freshDir();
  const target = join(root, 'claim.json');
  // The seam plants the winner right before our link, after the pre-check.
  const seam: SafeFsSeam = {
    ...fsp,
    link: (async (from: string, to: string) => {
      await fsp.writeFile(to, 'winner', { mode: 0o600 });
      return fsp.link(from, to);
    }) as SafeFsSeam['link'],
  };
  await rejectsWith(publishRecord(root, 'claim.json', 'loser', 'link', { fs: seam }), 'EXISTS', { clause: 'PUB-3' });
  assert.is(await fsp.readFile(target, 'utf8'), 'winner');
  assert.equal(await dotFiles(root), []);
});

publishing('rename placement replaces a previous version', async () => {
  const root = await freshDir();
  await publishRecord(root, 'state.json', 'v1', 'rename');
  await publishRecord(root, 'state.json', Buffer.from('v2'), 'rename');
  assert.is(await fsp.readFile(join(root, 'state.json'), 'utf8'), 'v2');
  assert.is(modeOf(await fsp.lstat(join(root, 'state.json'))), 0o600);
  assert.equal(await dotFiles(root), []);
});

publishing('refuses a symlink at the target for both placements and never writes through it', async () => {
  const { root, outsideFile, outsideDir } = await arena();
  for (const placement of ['link', 'rename'] as const) {
    for (const [, target] of linkTargets(outsideFile, outsideDir)) {
      const link = join(root, 'record.json');
      await fsp.symlink(target, link);
      await rejectsWith(publishRecord(root, 'record.json', 'evil', placement), 'SYMLINK_REFUSED', {
        clause: 'SEC-2',
        path: link,
      });
      assert.ok((await fsp.lstat(link)).isSymbolicLink(), 'the link itself is left for inspection');
      await fsp.unlink(link);
    }
  }
  await assertOutsideUntouched(outsideFile, outsideDir);
  assert.equal(await dotFiles(root), []);
});

publishing('refuses to publish into a directory that is a symlink', async () => {
  const { root, outsideFile, outsideDir } = await arena();
  const jobs = join(root, 'jobs');
  for (const [, target] of linkTargets(outsideFile, outsideDir)) {
    await fsp.symlink(target, jobs);
    for (const placement of ['link', 'rename'] as const) {
      await rejectsWith(publishRecord(jobs, 'r.json', 'x', placement), 'SYMLINK_REFUSED', { path: jobs });
    }
    await fsp.unlink(jobs);
  }
  await fsp.symlink(outsideDir, jobs);
  // Also when the link is higher up and the caller names the queue root.
  await fsp.mkdir(join(outsideDir, 'sub'), { mode: 0o700 });
  await rejectsWith(publishRecord(join(jobs, 'sub'), 'r.json', 'x', 'link', { root }), 'SYMLINK_REFUSED', { path: jobs });
  assert.equal(await fsp.readdir(join(outsideDir, 'sub')), []);
  await fsp.rmdir(join(outsideDir, 'sub'));
  await assertOutsideUntouched(outsideFile, outsideDir);
});

publishing('refuses a FIFO or a directory at the target', async () => {
  const root = await freshDir();
  mkfifo(join(root, 'fifo.json'));
  await fsp.mkdir(join(root, 'dir.json'), { mode: 0o700 });
  for (const placement of ['link', 'rename'] as const) {
    await rejectsWith(withWatchdog(5000, publishRecord(root, 'fifo.json', 'x', placement)), 'NOT_REGULAR');
    await rejectsWith(publishRecord(root, 'dir.json', 'x', placement), 'NOT_REGULAR');
  }
  assert.equal(await dotFiles(root), []);
});

publishing('refuses names outside the entry charset rules', async () => {
  const root = await freshDir();
  for (const name of ['', '.', '..', '.hidden', 'a/b', 'nul\0', 'x'.repeat(238)]) {
    await rejectsWith(publishRecord(root, name, 'x', 'link'), 'INVALID_ID');
  }
  await publishRecord(root, 'x'.repeat(237), 'x', 'link');
});

publishing('an fsync failure (ENOSPC) is IO with errno and leaves neither temp nor target', async () => {
  const root = await freshDir();
  const seam: SafeFsSeam = {
    ...fsp,
    open: (async (p: string, flags: number, mode?: number) => {
      const handle = await fsp.open(p, flags, mode);
      if ((flags & constants.O_CREAT) !== 0) handle.sync = async () => Promise.reject(errnoError('ENOSPC'));
      return handle;
    }) as SafeFsSeam['open'],
  };
  for (const placement of ['link', 'rename'] as const) {
    await rejectsWith(publishRecord(root, 'job.json', '{}', placement, { fs: seam }), 'IO', {
      errno: 'ENOSPC',
      clause: 'PUB-2',
    });
    assert.equal(await fsp.readdir(root), []);
  }
});

publishing('a write or link failure leaves no temp file', async () => {
  const root = await freshDir();
  const failingWrite: SafeFsSeam = {
    ...fsp,
    open: (async (p: string, flags: number, mode?: number) => {
      const handle = await fsp.open(p, flags, mode);
      handle.write = (async () => Promise.reject(errnoError('EDQUOT'))) as FileHandle['write'];
      return handle;
    }) as SafeFsSeam['open'],
  };
  await rejectsWith(publishRecord(root, 'a.json', '{}', 'link', { fs: failingWrite }), 'IO', { errno: 'EDQUOT' });
  const failingLink: SafeFsSeam = { ...fsp, link: async () => Promise.reject(errnoError('EMLINK')) };
  await rejectsWith(publishRecord(root, 'a.json', '{}', 'link', { fs: failingLink }), 'IO', { errno: 'EMLINK' });
  const failingRename: SafeFsSeam = { ...fsp, rename: async () => Promise.reject(errnoError('EROFS')) };
  await rejectsWith(publishRecord(root, 'a.json', '{}', 'rename', { fs: failingRename }), 'IO', { errno: 'EROFS' });
  assert.equal(await fsp.readdir(root), []);
});

publishing('a directory fsync failure after the commit point is IO with clause PUB-5; the record is in place', async () => {
  const root = await freshDir();
  const seam: SafeFsSeam = {
    ...fsp,
    open: (async (p: string, flags: number, mode?: number) => {
      const handle = await fsp.open(p, flags, mode);
      if ((flags & constants.O_DIRECTORY) !== 0) handle.sync = async () => Promise.reject(errnoError('EIO'));
      return handle;
    }) as SafeFsSeam['open'],
  };
  await rejectsWith(publishRecord(root, 'done.json', 'x', 'link', { fs: seam }), 'IO', { errno: 'EIO', clause: 'PUB-5' });
  assert.is(await fsp.readFile(join(root, 'done.json'), 'utf8'), 'x');
  assert.equal(await dotFiles(root), []);
});

publishing.run();

// ---------------------------------------------------------------- createExclusive
const exclusive = suite('createExclusive');
exclusive.after(cleanupAll);

exclusive('creates a 0600 file exclusively and returns a writable handle', async () => {
  const root = await freshDir();
  const handle = await withUmask(0, () => createExclusive(root, 'out.bin'));
  await handle.write(Buffer.from('data'));
  await handle.sync();
  await handle.close();
  assert.is(await fsp.readFile(join(root, 'out.bin'), 'utf8'), 'data');
  assert.is(modeOf(await fsp.lstat(join(root, 'out.bin'))), 0o600);
  await rejectsWith(createExclusive(root, 'out.bin'), 'EXISTS', { clause: 'PUB-7' });
  assert.is(await fsp.readFile(join(root, 'out.bin'), 'utf8'), 'data');
});

exclusive('honours an owner-only mode and refuses one granting group or others', async () => {
  const root = await freshDir();
  const handle = await withUmask(0o077, () => createExclusive(root, 'ro', 0o400));
  await handle.close();
  assert.is(modeOf(await fsp.lstat(join(root, 'ro'))), 0o400);
  await rejectsWith(createExclusive(root, 'wide', 0o644), 'USAGE');
});

exclusive('refuses a symlink at the name and at the parent; writes nothing through them', async () => {
  const { root, outsideFile, outsideDir } = await arena();
  for (const [, target] of linkTargets(outsideFile, outsideDir)) {
    await fsp.symlink(target, join(root, 'out'));
    await rejectsWith(createExclusive(root, 'out'), 'SYMLINK_REFUSED', { path: join(root, 'out') });
    await fsp.unlink(join(root, 'out'));
  }
  for (const [, target] of linkTargets(outsideFile, outsideDir)) {
    await fsp.symlink(target, join(root, 'outputs'));
    await rejectsWith(createExclusive(join(root, 'outputs'), 'out'), 'SYMLINK_REFUSED', { path: join(root, 'outputs') });
    await fsp.unlink(join(root, 'outputs'));
  }
  await assertOutsideUntouched(outsideFile, outsideDir);
});

exclusive('a FIFO at the name is EXISTS and never opened', async () => {
  const root = await freshDir();
  mkfifo(join(root, 'out'));
  await rejectsWith(withWatchdog(5000, createExclusive(root, 'out')), 'EXISTS');
});

exclusive.run();

// ---------------------------------------------------------------- listDir
const listing = suite('listDir');
listing.after(cleanupAll);

listing('reports every kind without following links', async () => {
  const { root, outsideDir } = await arena();
  await fsp.writeFile(join(root, 'b-file'), '', { mode: 0o600 });
  await fsp.mkdir(join(root, 'a-dir'), { mode: 0o700 });
  await fsp.symlink(outsideDir, join(root, 'c-link'));
  mkfifo(join(root, 'd-fifo'));
  await fsp.writeFile(join(root, '.tmp'), '', { mode: 0o600 });
  const server = await listenUnixSocket(join(root, 'e-sock'));
  try {
    assert.equal(await listDir(root), [
      { name: '.tmp', kind: 'file' },
      { name: 'a-dir', kind: 'dir' },
      { name: 'b-file', kind: 'file' },
      { name: 'c-link', kind: 'symlink' },
      { name: 'd-fifo', kind: 'fifo' },
      { name: 'e-sock', kind: 'socket' },
    ]);
  } finally {
    server.close();
  }
});

listing('refuses a symlinked directory', async () => {
  const { root, outsideDir } = await arena();
  await fsp.symlink(outsideDir, join(root, 'jobs'));
  await rejectsWith(listDir(join(root, 'jobs')), 'SYMLINK_REFUSED');
});

listing('falls back to lstat when d_type is unknown', async () => {
  const root = await freshDir();
  await fsp.writeFile(join(root, 'f'), '', { mode: 0o600 });
  await fsp.symlink('/etc', join(root, 'l'));
  // A Dirent answering false to every is*() is what DT_UNKNOWN looks like.
  const unknown = (name: string): Dirent => {
    const no = (): boolean => false;
    return {
      name, parentPath: root, path: root,
      isFile: no, isDirectory: no, isSymbolicLink: no, isFIFO: no, isSocket: no, isBlockDevice: no, isCharacterDevice: no,
    } as Dirent;
  };
  const seam: SafeFsSeam = {
    ...fsp,
    reads: { ...realReads, readdir: (() => ['f', 'l', 'vanished'].map(unknown)) as unknown as ReadCalls['readdir'] },
  };
  assert.equal(await listDir(root, { fs: seam }), [
    { name: 'f', kind: 'file' },
    { name: 'l', kind: 'symlink' },
  ]);
});

listing("survives Node's own lstat fallback failing on an entry that vanished", async () => {
  const root = await freshDir();
  await fsp.writeFile(join(root, 'stays'), '', { mode: 0o600 });
  const seam: SafeFsSeam = {
    ...fsp,
    reads: {
      ...realReads,
      readdir: ((p: string, options?: { withFileTypes?: boolean }) => {
        if (options?.withFileTypes === true) throw errnoError('ENOENT');
        return [...readdirSync(p), 'gone'];
      }) as unknown as ReadCalls['readdir'],
    },
  };
  assert.equal(await listDir(root, { fs: seam }), [{ name: 'stays', kind: 'file' }]);
  await rejectsWith(listDir(join(root, 'missing')), 'NOT_FOUND');
});

listing.run();

// ---------------------------------------------------------------- fsyncDir
const syncing = suite('fsyncDir');
syncing.after(cleanupAll);

syncing('fsyncs a directory; refuses a symlink and a file', async () => {
  const { root, outsideDir } = await arena();
  await fsyncDir(root);
  await fsp.symlink(outsideDir, join(root, 'l'));
  await rejectsWith(fsyncDir(join(root, 'l')), 'SYMLINK_REFUSED');
  await fsp.writeFile(join(root, 'f'), '', { mode: 0o600 });
  await rejectsWith(fsyncDir(join(root, 'f')), 'NOT_REGULAR');
  await rejectsWith(fsyncDir(join(root, 'missing')), 'NOT_FOUND');
});

syncing.run();

// ---------------------------------------------------------------- renameNoReplace
const moving = suite('renameNoReplace');
moving.after(cleanupAll);

moving('moves a staged directory into place', async () => {
  const root = await freshDir();
  const staged = join(root, '.stage-1');
  await ensurePrivateDir(staged);
  await fsp.writeFile(join(staged, 'x'), 'payload', { mode: 0o600 });
  await renameNoReplace(staged, join(root, 'job-1'), { root });
  assert.is(await fsp.readFile(join(root, 'job-1', 'x'), 'utf8'), 'payload');
  assert.is(await fsp.lstat(staged).then(() => true, () => false), false);
});

moving('never replaces an existing (even empty) directory or a file', async () => {
  const root = await freshDir();
  const staged = join(root, '.stage');
  await ensurePrivateDir(staged);
  await fsp.writeFile(join(staged, 'x'), 'new', { mode: 0o600 });
  await ensurePrivateDir(join(root, 'empty'));
  await rejectsWith(renameNoReplace(staged, join(root, 'empty')), 'EXISTS', { path: join(root, 'empty') });
  assert.equal(await fsp.readdir(join(root, 'empty')), []);
  assert.equal(await fsp.readdir(staged), ['x']);
  await fsp.writeFile(join(root, 'file'), '', { mode: 0o600 });
  await rejectsWith(renameNoReplace(staged, join(root, 'file')), 'EXISTS');
});

moving('even when the empty directory appears after the pre-check, a non-empty one is never replaced', async () => {
  const root = await freshDir();
  const staged = join(root, '.stage');
  await ensurePrivateDir(staged);
  const dst = join(root, 'job');
  const seam: SafeFsSeam = {
    ...fsp,
    rename: (async (from: string, to: string) => {
      await fsp.mkdir(to, { mode: 0o700 });
      await fsp.writeFile(join(to, 'winner'), '', { mode: 0o600 });
      return fsp.rename(from, to);
    }) as SafeFsSeam['rename'],
  };
  await rejectsWith(renameNoReplace(staged, dst, { fs: seam }), 'EXISTS');
  assert.equal(await fsp.readdir(dst), ['winner']);
});

moving('refuses symlinks at source and destination', async () => {
  const { root, outsideFile, outsideDir } = await arena();
  await fsp.symlink(outsideDir, join(root, 'src-link'));
  await rejectsWith(renameNoReplace(join(root, 'src-link'), join(root, 'dst')), 'SYMLINK_REFUSED');
  const staged = join(root, '.stage');
  await ensurePrivateDir(staged);
  await fsp.symlink(join(outsideDir, 'nowhere'), join(root, 'dst'));
  await rejectsWith(renameNoReplace(staged, join(root, 'dst')), 'SYMLINK_REFUSED');
  await assertOutsideUntouched(outsideFile, outsideDir);
});

moving.run();

// ---------------------------------------------------------------- removeTree
const removing = suite('removeTree');
removing.after(cleanupAll);

removing('removes a tree without following links inside it or at its top', async () => {
  const { root, outsideFile, outsideDir } = await arena();
  await fsp.writeFile(join(outsideDir, 'keep'), 'keep', { mode: 0o600 });
  const job = join(root, 'job');
  await fsp.mkdir(join(job, 'deep', 'er'), { recursive: true, mode: 0o700 });
  await fsp.writeFile(join(job, 'deep', 'er', 'f'), 'x', { mode: 0o600 });
  await fsp.symlink(outsideDir, join(job, 'to-dir'));
  await fsp.symlink(outsideFile, join(job, 'deep', 'to-file'));
  mkfifo(join(job, 'deep', 'fifo'));
  assert.is(await withWatchdog(5000, removeTree(job)), true);
  assert.is(await fsp.lstat(job).then(() => true, () => false), false);
  assert.is(await fsp.readFile(outsideFile, 'utf8'), OUTSIDE_CONTENT);
  assert.equal(await fsp.readdir(outsideDir), ['keep']);

  await fsp.symlink(outsideDir, join(root, 'top-link'));
  assert.is(await removeTree(join(root, 'top-link')), true);
  assert.equal(await fsp.readdir(outsideDir), ['keep']);
  assert.is(await removeTree(join(root, 'absent')), false);
});

removing('refuses a symlinked parent', async () => {
  const { root, outsideDir } = await arena();
  await fsp.writeFile(join(outsideDir, 'keep'), 'keep', { mode: 0o600 });
  await fsp.symlink(outsideDir, join(root, 'jobs'));
  await rejectsWith(removeTree(join(root, 'jobs', 'keep')), 'SYMLINK_REFUSED');
  assert.equal(await fsp.readdir(outsideDir), ['keep']);
  await rejectsWith(removeTree('/'), 'USAGE');
});

removing.run();

// ---------------------------------------------------------------- isTempName
const temps = suite('isTempName');

temps('dot names are temp names', () => {
  assert.ok(isTempName('.job.json.0123456789abcdef'));
  assert.ok(isTempName('.stage'));
  assert.not.ok(isTempName('job.json'));
});

temps.run();
