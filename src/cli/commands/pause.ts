/**
 * `fsjob pause [--reason TEXT]` and `fsjob resume`: stop and restart a queue's consumption (PAUSE-1, spec/records.md).
 * This module declares their options and help; pause-run.ts runs them, loaded only then.
 */
import type { FsjobCommand } from '../command.ts';
import { withQueue } from '../queue-option.ts';

export const pauseCommand: FsjobCommand = {
  builder: (yargs) =>
    withQueue(yargs)
      .option('reason', { describe: 'Why, for fsjob status and the workers (at most 1024 bytes)', type: 'string' })
      .option('json', { describe: 'Print {queue, published, pause} as JSON', type: 'boolean', default: false })
      .example('$0 pause --reason "disk maintenance"', 'workers finish what they run and claim nothing more')
      .epilog(
        'Publishes pause.json in the queue root (a 1.1 record); every 1.1 consumer checks it before each claim (PAUSE-1). ' +
          'Cancelling and recovering still work on a paused queue. Exit status: 0 paused (also when it was paused already), 1 the queue cannot be written.',
      ),
  run: async (args, io) => (await import('./pause-run.ts')).runPause(args, io),
};

export const resumeCommand: FsjobCommand = {
  builder: (yargs) =>
    withQueue(yargs)
      .option('json', { describe: 'Print {queue, resumed} as JSON', type: 'boolean', default: false })
      .example('$0 resume', 'remove pause.json; workers claim again within a second')
      .epilog('Removes pause.json from the queue root (PUB-10). Exit status: 0 resumed (also when it was not paused), 1 the queue cannot be written.'),
  run: async (args, io) => (await import('./pause-run.ts')).runResume(args, io),
};
