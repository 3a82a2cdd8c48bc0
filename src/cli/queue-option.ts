/**
 * The `--queue DIR` option every operator command declares (queue-arg.ts
 * opens the queue it names). Apart from queue-arg.ts so that a command's
 * options, and its --help, load no queue code (commands/enqueue.ts).
 */
import type { Argv } from 'yargs';

/** Declares --queue DIR (-q) on a command. */
export function withQueue(yargs: Argv): Argv {
  return yargs.option('queue', {
    alias: 'q',
    type: 'string',
    describe: 'Queue directory (default: $FSJOB_QUEUE, else $XDG_STATE_HOME/fsjob/default or ~/.local/state/fsjob/default)',
  });
}
