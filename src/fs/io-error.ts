/**
 * Turns an unexpected failure from the operating system into an FsjobError of
 * code IO that names the path, the operation and the errno, so every caller
 * reports filesystem trouble the same way. An FsjobError passes through
 * unchanged: a refusal decided deeper down keeps its own code and clause.
 */
import { FsjobError, errnoOf } from '../base/errors.ts';
import { descriptorAdvice } from '../base/descriptors.ts';

/**
 * The directories held open (src/fs/open-dir.ts), by descriptor: a call
 * through one names `/proc/self/fd/N/...`, and node's message for its
 * failure says so; messages name the directory instead.
 */
const heldPaths = new Map<number, string>();

/** Messages name `path` for calls through descriptor `fd` until forgetHeldPath(fd). */
export function nameHeldPath(fd: number, path: string): void {
  heldPaths.set(fd, path);
}

export function forgetHeldPath(fd: number): void {
  heldPaths.delete(fd);
}

/** A system's message with the held directories' descriptor paths replaced by their names. */
export function shownMessage(message: string): string {
  return message.includes('/proc/self/fd/') ? message.replace(/\/proc\/self\/fd\/([0-9]+)/g, (whole, fd: string) => heldPaths.get(Number(fd)) ?? whole) : message;
}

export function wrapIo(error: unknown, path: string, doing: string, clause?: string): FsjobError {
  if (error instanceof FsjobError) return error;
  const errno = errnoOf(error) ?? 'EUNKNOWN';
  const detail = shownMessage(error instanceof Error ? error.message : String(error));
  // Out of descriptors is about this process, not the filesystem: say which limit.
  const advice = errno === 'EXDEV' ? `it would cross filesystems (EXDEV): a queue's tmp/ and jobs/ must be on one filesystem (LAYOUT-3); fsjob validate shows what is mounted where it should not be` : descriptorAdvice(errno);
  return new FsjobError(
    'IO',
    advice === undefined ? `${doing} ${path} failed with ${errno} (${detail}); check free space, permissions and the filesystem, then retry` : `${doing} ${path} failed: ${advice}`,
    { path, errno, cause: error, ...(clause === undefined ? {} : { clause }) },
  );
}
