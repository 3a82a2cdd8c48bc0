/**
 * `fsjob cancel ID... [--force] [--reason TEXT]`: CANCEL-1, and CANCEL-2 for a job nobody has claimed;
 * of several ids, each cancelled or refused on its own.
 * This module declares its options and help; cancel-run.ts runs it, loaded only then.
 */
import type { FsjobCommand } from '../command.ts';
import { withQueue } from '../queue-option.ts';

export const cancelCommand: FsjobCommand = {
  builder: (yargs) =>
    withQueue(yargs)
      .positional('ids', { describe: 'Job ids, or unique prefixes of them', type: 'string', array: true })
      .option('force', { describe: 'Kill a running job at once (SIGKILL) instead of SIGTERM and a grace', type: 'boolean', default: false })
      .option('reason', { describe: 'Why, for the record (at most 1024 bytes)', type: 'string' })
      .option('json', { describe: 'Print the result as JSON', type: 'boolean', default: false })
      .example('$0 cancel $id', 'graceful: SIGTERM, SIGKILL after 10 s; outcome cancelled (130)')
      .example('$0 cancel --force --reason "runaway" $id', 'SIGKILL at once; outcome force_stopped (137)')
      .example('$0 cancel $a $b $c', 'each cancelled on its own; one finished already is named on stderr, the others are cancelled all the same')
      .epilog(
        'A cancelled job is never retried. Exit status: 0 the request stands (asking twice is fine), 1 the job already finished (the message gives its outcome), 4 no such job. ' +
          'Of several ids, each is cancelled or refused on its own (a finished one does not stop the others; --json prints {cancelled, refused} instead of one result, and lists it under refused); ' +
          "the exit status is then the first refusal's, in the order named.",
      ),
  run: async (args, io) => (await import('./cancel-run.ts')).runCancel(args, io),
};
