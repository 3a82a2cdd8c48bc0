/**
 * The `--queue DIR` option every operator command shares, and opening the
 * queue it names: --queue, else $FSJOB_QUEUE, else the per-user default
 * (defaultQueuePath in src/model/queue.ts).
 *
 * Command modules import the library lazily (inside `run`), so `fsjob`
 * loads only what the command it runs needs.
 */
import type { Argv } from 'yargs';
import type { Queue } from '../model/queue.ts';
import { FsjobError } from '../base/errors.ts';
import { isJobId } from '../model/layout.ts';

export function withQueue(yargs: Argv): Argv {
  return yargs.option('queue', {
    alias: 'q',
    type: 'string',
    describe: 'Queue directory (default: $FSJOB_QUEUE, else $XDG_STATE_HOME/fsjob/default or ~/.local/state/fsjob/default)',
  });
}

export async function queuePathOf(args: Record<string, unknown>): Promise<string> {
  const given = args['queue'];
  if (typeof given === 'string' && given !== '') return given;
  const { defaultQueuePath } = await import('../model/queue.ts');
  return defaultQueuePath();
}

export async function openQueueOf(args: Record<string, unknown>): Promise<Queue> {
  const { openQueue } = await import('../model/queue.ts');
  return openQueue(await queuePathOf(args));
}

/** The producer library, loaded when a command runs. */
export const producer = (): Promise<typeof import('../producer/index.ts')> => import('../producer/index.ts');

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
