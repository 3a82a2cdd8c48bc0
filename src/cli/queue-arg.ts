/**
 * The `--queue DIR` option every operator command shares, and opening the
 * queue it names: --queue, else $FSJOB_QUEUE, else the per-user default
 * (defaultQueuePath in src/core/queue.ts).
 */
import type { Argv } from 'yargs';
import { defaultQueuePath, openQueue, type Queue } from '../core/queue.ts';
import { FsjobError } from '../core/errors.ts';
import { isJobId } from '../core/layout.ts';

export function withQueue(yargs: Argv): Argv {
  return yargs.option('queue', {
    alias: 'q',
    type: 'string',
    describe: 'Queue directory (default: $FSJOB_QUEUE, else $XDG_STATE_HOME/fsjob/default or ~/.local/state/fsjob/default)',
  });
}

export function queuePathOf(args: Record<string, unknown>): string {
  const given = args['queue'];
  return typeof given === 'string' && given !== '' ? given : defaultQueuePath();
}

export function openQueueOf(args: Record<string, unknown>): Promise<Queue> {
  return openQueue(queuePathOf(args));
}

/** The ID positional, checked against LAYOUT-4 before it is used in a path (SEC-7). */
export function jobIdOf(args: Record<string, unknown>): string {
  const id = String(args['id'] ?? '');
  if (!isJobId(id)) {
    throw new FsjobError('USAGE', `${JSON.stringify(id)} is not a job id (LAYOUT-4: 19 digits, "-", 16 hex digits, as fsjob enqueue prints)`, { clause: 'LAYOUT-4' });
  }
  return id;
}

/** JSON for people (--json output of reports): two-space indent, one trailing newline. */
export function jsonText(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}
