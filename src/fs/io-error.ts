/**
 * Turns an unexpected failure from the operating system into an FsjobError of
 * code IO that names the path, the operation and the errno, so every caller
 * reports filesystem trouble the same way. An FsjobError passes through
 * unchanged: a refusal decided deeper down keeps its own code and clause.
 */
import { FsjobError, errnoOf } from '../base/errors.ts';

export function wrapIo(error: unknown, path: string, doing: string, clause?: string): FsjobError {
  if (error instanceof FsjobError) return error;
  const errno = errnoOf(error) ?? 'EUNKNOWN';
  const detail = error instanceof Error ? error.message : String(error);
  return new FsjobError(
    'IO',
    `${doing} ${path} failed with ${errno} (${detail}); check free space, permissions and the filesystem, then retry`,
    { path, errno, cause: error, ...(clause === undefined ? {} : { clause }) },
  );
}
