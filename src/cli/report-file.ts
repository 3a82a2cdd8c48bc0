/**
 * `--output FILE` of `fsjob validate` and `fsjob conformance`: the JSON
 * report written to a file of the user's choosing, complete or not at all.
 * A CI step that reads the file after the run, or a run killed halfway,
 * never leaves or sees half a report: the previous file stays until the new
 * one is whole and renamed over it.
 *
 * This is write-file-atomic's job, and the only kind of file fsjob writes
 * with it: a file outside every queue, named by the user, whose symlinks the
 * user may mean (a report path through a linked directory is followed, as
 * any tool would). Queue records never go through it; why is in
 * spec/design-notes.md ("Why protocol records do not use write-file-atomic"),
 * and test/package/write-file-atomic.test.ts shows each reason on a real
 * directory.
 */
import { realpath } from 'node:fs/promises';
import { dirname, resolve, sep } from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import { FsjobError, errnoOf } from '../base/errors.ts';

async function realOrSelf(path: string): Promise<string> {
  return realpath(path).catch(() => path);
}

/**
 * Writes `text` to `file` atomically. Refuses (USAGE) a file inside one of
 * `queues` (validate's promise: it never writes into a queue); a file that
 * cannot be written is IO with its errno.
 */
export async function writeReportFile(file: string, text: string, queues: readonly string[] = []): Promise<void> {
  const target = resolve(file);
  const parent = await realOrSelf(dirname(target));
  for (const queue of queues) {
    const root = await realOrSelf(resolve(queue));
    if (parent === root || parent.startsWith(`${root}${sep}`)) {
      throw new FsjobError('USAGE', `--output ${file} is inside the queue ${queue}; a report is never written into a queue (write it elsewhere)`, { path: target });
    }
  }
  try {
    await writeFileAtomic(target, text);
  } catch (error) {
    const errno = errnoOf(error) ?? 'EIO';
    throw new FsjobError('IO', `cannot write the report to ${file} (${errno})`, { path: target, errno, cause: error });
  }
}
