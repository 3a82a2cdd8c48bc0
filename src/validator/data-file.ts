/**
 * A job's data files (stdin, stdout.<g>, stderr.<g>) as the validator reads
 * them: looked at (SEC-4..SEC-6, the bound) or read bounded and hashed for
 * the digest a record states (spec.json's for stdin, the receipt's for an
 * output, RCPT-5), each refusal a finding of the file's own. The records
 * around them are job-scan.ts's.
 */
import { createHash } from 'node:crypto';
import { isFsjobError } from '../base/errors.ts';
import { lstatIfExistsSync, readBoundedSync } from '../fs/safefs.ts';
import { type AuditEnv, Sink, checkStats, reportUnreadable } from './entries.ts';

/** What a data file is found to be: its size, and its SHA-256 when it was read. */
export interface DataFile {
  size: number;
  sha256?: string;
}

const EMPTY_SHA256 = createHash('sha256').digest('hex');

/** lstat a data file for SEC-4..SEC-6; its size, or undefined when it vanished. */
export function statDataFile(env: AuditEnv, sink: Sink, path: string, shown: string, id: string, bound: number): DataFile | undefined {
  const stats = lstatIfExistsSync(path);
  if (stats === undefined) return undefined;
  sink.files += 1;
  checkStats(sink, env, shown, stats, id);
  if (stats.size > bound) {
    sink.add('ENTRY_TOO_LARGE', `${shown} is ${stats.size} bytes, over its bound of ${bound}`, shown, id);
    return undefined;
  }
  return { size: stats.size };
}

/** Read a data file bounded and hash it; refusals become findings. An empty file is not opened. */
export function hashDataFile(env: AuditEnv, sink: Sink, path: string, shown: string, id: string, bound: number): DataFile | undefined {
  const stats = lstatIfExistsSync(path);
  if (stats === undefined) return undefined;
  if (stats.size === 0 && stats.isFile() && stats.uid === env.uid && (stats.mode & 0o022) === 0) {
    sink.files += 1;
    checkStats(sink, env, shown, stats, id);
    return { size: 0, sha256: EMPTY_SHA256 };
  }
  const hash = createHash('sha256');
  try {
    const read = readBoundedSync(path, bound, { hash, scratch: env.scratch, uid: env.uid });
    sink.files += 1;
    checkStats(sink, env, shown, read.stats, id);
    return { size: read.stats.size, sha256: hash.digest('hex') };
  } catch (error) {
    if (isFsjobError(error, 'NOT_FOUND')) return undefined;
    if (!isFsjobError(error)) throw error;
    sink.files += 1;
    switch (error.code) {
      case 'TOO_LARGE':
        sink.add('ENTRY_TOO_LARGE', `${shown} is over its bound of ${bound} bytes`, shown, id);
        return undefined;
      case 'UNSAFE_MODE':
      case 'FOREIGN_OWNER':
        checkStats(sink, env, shown, stats, id);
        return undefined;
      case 'SYMLINK_REFUSED':
      case 'NOT_REGULAR':
        // Swapped since the listing: report what it is now.
        sink.add(error.code === 'SYMLINK_REFUSED' ? 'ENTRY_SYMLINK' : 'ENTRY_WRONG_TYPE', error.message.split('; ')[0] ?? error.message, shown, id);
        return undefined;
      default:
        if (reportUnreadable(sink, error, shown, id)) return undefined;
        throw error;
    }
  }
}
