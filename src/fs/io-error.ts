/**
 * Turns an unexpected failure from the operating system into an FsjobError of
 * code IO that names the path, the operation and the errno, so every caller
 * reports filesystem trouble the same way. An FsjobError passes through
 * unchanged: a refusal decided deeper down keeps its own code and clause.
 */
import { FsjobError, errnoOf } from '../base/errors.ts';
import { descriptorAdvice } from '../base/descriptors.ts';

export function wrapIo(error: unknown, path: string, doing: string, clause?: string): FsjobError {
  if (error instanceof FsjobError) return error;
  const errno = errnoOf(error) ?? 'EUNKNOWN';
  const detail = error instanceof Error ? error.message : String(error);
  // Out of descriptors is about this process, not the filesystem: say which limit.
  const advice = errno === 'EXDEV' ? `it would cross filesystems (EXDEV): a queue's tmp/ and jobs/ must be on one filesystem (LAYOUT-3); fsjob validate shows what is mounted where it should not be` : descriptorAdvice(errno);
  return new FsjobError(
    'IO',
    advice === undefined ? `${doing} ${path} failed with ${errno} (${detail}); check free space, permissions and the filesystem, then retry` : `${doing} ${path} failed: ${advice}`,
    { path, errno, cause: error, ...(clause === undefined ? {} : { clause }) },
  );
}
