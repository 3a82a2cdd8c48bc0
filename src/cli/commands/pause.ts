/** `fsjob pause [--reason TEXT]` and `fsjob resume`: stop and restart a queue's consumption (PAUSE-1, spec/records.md). */
import type { FsjobCommand } from '../command.ts';
import { EXIT } from '../exit.ts';
import { pauseQueue, resumeQueue } from '../../model/pause.ts';
import { jsonText, openQueueOf, withQueue } from '../queue-arg.ts';

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
  run: async (args, io) => {
    const queue = await openQueueOf(args);
    const reason = args['reason'] as string | undefined;
    const { published, record } = await pauseQueue(queue, reason === undefined ? {} : { reason });
    if (args['json'] === true) io.stdout(jsonText({ queue: queue.root, published, pause: record }));
    else if (published) io.stdout(`paused ${queue.root}: no job is claimed until fsjob resume\n`);
    else io.stdout(`${queue.root} was paused already${record === null ? '' : ` (since ${new Date(record.paused_ms).toISOString()}${record.reason === null ? '' : `: ${record.reason}`})`}\n`);
    return EXIT.OK;
  },
};

export const resumeCommand: FsjobCommand = {
  builder: (yargs) =>
    withQueue(yargs)
      .option('json', { describe: 'Print {queue, resumed} as JSON', type: 'boolean', default: false })
      .example('$0 resume', 'remove pause.json; workers claim again within a second')
      .epilog('Removes pause.json from the queue root (PUB-10). Exit status: 0 resumed (also when it was not paused), 1 the queue cannot be written.'),
  run: async (args, io) => {
    const queue = await openQueueOf(args);
    const resumed = await resumeQueue(queue);
    if (args['json'] === true) io.stdout(jsonText({ queue: queue.root, resumed }));
    else io.stdout(resumed ? `resumed ${queue.root}\n` : `${queue.root} was not paused\n`);
    return EXIT.OK;
  },
};
