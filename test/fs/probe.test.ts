/**
 * FS-1..FS-3: a filesystem without the operations fsjob needs is refused
 * before anything depends on it, naming what is missing; a link that says
 * EEXIST for the link it made (a retransmission) is recognised. The
 * filesystems are simulated through the seam: the calls behave as vfat (no
 * hard links), sshfs without its extensions (no rename over, hard links as
 * copies) and an NFS client whose reply was lost (EEXIST after the link).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import * as nodeFs from 'node:fs/promises';
import { copyFileSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { initQueue } from '../../src/model/queue.ts';
import { publishRecord, type SafeFsSeam } from '../../src/fs/safefs.ts';
import { Worker } from '../../src/consumer/index.ts';
import { cleanupAll, freshDir, rejectsWith } from '../support/helpers.ts';

const errno = (code: string): Error => Object.assign(new Error(`${code}: simulated`), { code });

const probe = suite('FS-1..FS-3: what the filesystem must provide');
probe.after(cleanupAll);

probe('init refuses a filesystem without hard links (vfat), names link() and leaves no queue and no probe files', async () => {
  const root = join(await freshDir('fs'), 'q');
  const fs: SafeFsSeam = { ...nodeFs, link: async () => Promise.reject(errno('EPERM')) };
  const error = await rejectsWith(initQueue(root, { fs }), 'IO', { clause: 'FS-2' });
  assert.is(error.errno, 'EPERM');
  assert.match(error.message, /link\(\) to a new name/);
  assert.not.ok(existsSync(join(root, 'fsjob.json')), 'no queue record: the directory is not a queue');
  assert.equal(readdirSync(join(root, 'tmp')), [], 'the probe removed its files');
});

probe('init of an existing queue only confirms it: no probe, so a read-only mount still answers (INIT-2)', async () => {
  const root = join(await freshDir('fs'), 'q');
  await initQueue(root);
  // A read-only mount: what exists is found (mkdir says EEXIST first, as Linux does), nothing is written.
  const writes = nodeFs.constants.O_WRONLY | nodeFs.constants.O_RDWR | nodeFs.constants.O_CREAT;
  const refusing = (): Promise<never> => Promise.reject(errno('EROFS'));
  const fs: SafeFsSeam = {
    ...nodeFs,
    open: (async (path: string, flags: number, mode?: number) => ((flags & writes) !== 0 ? refusing() : nodeFs.open(path, flags, mode))) as SafeFsSeam['open'],
    mkdir: async (path) => Promise.reject(errno(existsSync(path) ? 'EEXIST' : 'EROFS')),
    link: refusing,
    rename: refusing,
  };
  const { created } = await initQueue(root, { fs });
  assert.is(created, false);
});

probe('init refuses a link that replaces an existing name instead of failing with EEXIST', async () => {
  const root = join(await freshDir('fs'), 'q');
  const fs: SafeFsSeam = {
    ...nodeFs,
    link: async (from, to) => {
      await nodeFs.unlink(to).catch(() => undefined);
      return nodeFs.link(from, to);
    },
  };
  const error = await rejectsWith(initQueue(root, { fs }), 'IO', { clause: 'FS-2' });
  assert.match(error.message, /onto an existing name/);
});

probe('init refuses a filesystem whose rename() cannot replace a file (sshfs without posix-rename)', async () => {
  const root = join(await freshDir('fs'), 'q');
  const fs: SafeFsSeam = {
    ...nodeFs,
    rename: async (from, to) => (existsSync(to) ? Promise.reject(errno('EPERM')) : nodeFs.rename(from, to)),
  };
  const error = await rejectsWith(initQueue(root, { fs }), 'IO', { clause: 'FS-2' });
  assert.match(error.message, /rename\(\) over an existing file/);
});

probe('hard links shown as copies (sshfs: another inode) pass the probe', async () => {
  const root = join(await freshDir('fs'), 'q');
  const fs: SafeFsSeam = {
    ...nodeFs,
    link: async (from, to) => {
      if (existsSync(to)) throw errno('EEXIST');
      copyFileSync(from, to);
    },
  };
  const { created } = await initQueue(root, { fs });
  assert.ok(created);
});

probe('a long-running consumer refuses to serve a queue whose filesystem lost its hard links', async () => {
  const root = join(await freshDir('fs'), 'q');
  const queue = await initQueue(root);
  const fs: SafeFsSeam = { ...nodeFs, link: async () => Promise.reject(errno('ENOSYS')) };
  const worker = new Worker({ queues: [queue], mode: 'drain', fs });
  const error = await rejectsWith(worker.run(), 'IO', { clause: 'FS-2' });
  assert.is(error.errno, 'ENOSYS');
});

probe('a link refused with EOPNOTSUPP while publishing is the filesystem\'s lack, never a lost race (FS-2)', async () => {
  const dir = await freshDir('fs');
  const fs: SafeFsSeam = { ...nodeFs, link: async () => Promise.reject(errno('EOPNOTSUPP')) };
  const error = await rejectsWith(publishRecord(dir, 'claim.1.json', '{}\n', 'link', { fs }), 'IO', { clause: 'FS-2' });
  assert.match(error.message, /refused link\(\) with EOPNOTSUPP/);
  assert.equal(readdirSync(dir), [], 'the temporary file is removed');
});

probe('a link that made the name but answered EEXIST (a retransmission) is a publication (FS-3), by inode or by bytes', async () => {
  for (const copies of [false, true]) {
    const dir = await freshDir('fs');
    const fs: SafeFsSeam = {
      ...nodeFs,
      link: async (from, to) => {
        if (copies) copyFileSync(from, to);
        else await nodeFs.link(from, to);
        throw errno('EEXIST');
      },
    };
    await publishRecord(dir, 'claim.1.json', '{"mine":true}\n', 'link', { fs });
    assert.is(readFileSync(join(dir, 'claim.1.json'), 'utf8'), '{"mine":true}\n');
    assert.equal(readdirSync(dir), ['claim.1.json'], `the temporary name is removed (${copies ? 'copy' : 'link'})`);
  }
});

probe('EEXIST for a name that holds another writer\'s record is a lost race (EXISTS)', async () => {
  const dir = await freshDir('fs');
  await publishRecord(dir, 'claim.1.json', '{"theirs":true}\n', 'link');
  await rejectsWith(publishRecord(dir, 'claim.1.json', '{"mine!":true}\n', 'link'), 'EXISTS', { clause: 'PUB-3' });
  assert.is(readFileSync(join(dir, 'claim.1.json'), 'utf8'), '{"theirs":true}\n');
});

probe.run();
