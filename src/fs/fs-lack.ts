/**
 * What a filesystem that lacks FS-1's operations looks like from inside a
 * call, and FS-3's second look at a link that said EEXIST.
 *
 * - FS-2: a link or rename refused with EPERM, ENOSYS, EOPNOTSUPP (ENOTSUP)
 *   is the filesystem saying it cannot do the operation (vfat has
 *   no hard links; sshfs needs the server's hardlink extension). Reporting it
 *   as a lost race or retrying would hide the one thing the operator must fix.
 * - FS-3: a network client that retransmits a link whose reply was lost gets
 *   EEXIST for the link it made. The name is ours when it is our temporary
 *   file (same device and inode) or, where hard links show as separate files
 *   (sshfs), when it holds exactly our bytes: every write-once record names
 *   its writer, so another writer's bytes differ.
 */
import type { Stats } from 'node:fs';
import { FsjobError, errnoOf } from '../base/errors.ts';
import { readIn } from './read.ts';
import type { DirRef } from './chain.ts';
import { lstatOrMissing, readFile, readsOf } from './steps.ts';

/** Where a queue can live instead (FS-1), for every refusal that names a filesystem's lack. */
export const FILESYSTEMS_THAT_DO = 'ext4, xfs, btrfs, tmpfs, NFSv4; sshfs only where the server has the hardlink and posix-rename extensions';

/** EXDEV is not here: across filesystems is LAYOUT-3's case, which io-error.ts words. */
const LACKS = new Set(['EPERM', 'ENOSYS', 'EOPNOTSUPP', 'ENOTSUP']);

/** FS-2: the error for a link or rename the filesystem cannot do, or undefined when `error` is something else. */
export function filesystemLack(error: unknown, operation: 'link' | 'rename', path: string): FsjobError | undefined {
  const errno = errnoOf(error);
  if (errno === undefined || !LACKS.has(errno)) return undefined;
  const what = operation === 'link' ? 'hard links (link() to a new name)' : 'rename() over an existing name within one filesystem';
  return new FsjobError(
    'IO',
    `the filesystem of ${path} refused ${operation}() with ${errno}: fsjob needs ${what} (FS-1); put the queue on a filesystem that has them (${FILESYSTEMS_THAT_DO})`,
    { path, errno, clause: 'FS-2', cause: error },
  );
}

/** FS-3: whether the entry `name` of `ref`, which link() said exists, is the record we linked from `tempName`. */
export async function holdsOwnRecord(ref: DirRef, tempName: string, name: string, occupant: Stats, bytes: Uint8Array): Promise<boolean> {
  const inode = sameInode(ref, tempName, occupant, bytes);
  if (inode !== undefined) return inode;
  const there = await readIn(ref, name, bytes.length, true).catch(() => undefined);
  return there !== undefined && Buffer.compare(there, bytes) === 0;
}

/** holdsOwnRecord in a held directory (publish-now.ts: no check of the directory to make before the read). */
export function ownRecordNow(ref: DirRef, tempName: string, name: string, occupant: Stats, bytes: Uint8Array): boolean {
  const inode = sameInode(ref, tempName, occupant, bytes);
  if (inode !== undefined) return inode;
  let there: Buffer | undefined;
  try {
    there = readFile(readsOf(ref.options.fs), ref.at(name), bytes.length, { allowMissing: true, listed: true, shown: ref.entry(name) })?.bytes;
  } catch {
    return false;
  }
  return there !== undefined && Buffer.compare(there, bytes) === 0;
}

/** True when the occupant is our temp file's inode, false when its size rules our bytes out, undefined when only its content can tell. */
function sameInode(ref: DirRef, tempName: string, occupant: Stats, bytes: Uint8Array): boolean | undefined {
  const ours = lstatOrMissing(readsOf(ref.options.fs), ref.at(tempName), ref.entry(tempName));
  if (ours !== undefined && ours.ino === occupant.ino && ours.dev === occupant.dev) return true;
  return occupant.size !== bytes.length ? false : undefined;
}
