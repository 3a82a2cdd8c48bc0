/** `fsjob gc [--keep N] [--older-than D]`: remove finished jobs and what nobody needs (GC-1, GC-2, READY-3, TEMP-1). */
import { gc } from '../../producer/index.ts';
import type { FsjobCommand } from '../command.ts';
import { EXIT } from '../exit.ts';
import { jsonText, openQueueOf, withQueue } from '../queue-arg.ts';
import { parseDuration, parseInteger } from '../units.ts';

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

export const gcCommand: FsjobCommand = {
  command: 'gc',
  describe: 'Remove finished jobs (never an unfinished one), stale ready entries, old holds and stale temporaries',
  builder: (yargs) =>
    withQueue(yargs)
      .option('keep', { describe: 'Keep the N most recently finished jobs (default 0)', type: 'number' })
      .option('older-than', { describe: 'Remove only jobs that finished at least this long ago: 30s, 10m, 2h, 7d (default 0)', type: 'string' })
      .option('dry-run', { describe: 'Say what would be removed; remove nothing', type: 'boolean', default: false })
      .option('json', { describe: 'Print what was removed as JSON', type: 'boolean', default: false })
      .example('$0 gc --older-than 7d', 'remove jobs that finished more than a week ago')
      .example('$0 gc --keep 1000', 'keep the 1000 most recently finished jobs')
      .example('$0 gc --dry-run --json | jq ".jobs | length"', 'how many jobs a gc would remove')
      .epilog(
        'A job is removed only when it has a valid receipt (GC-1): it is renamed out of jobs/ (it disappears at once) and then deleted. ' +
          'Exit status: 0 done, 1 the queue cannot be read or a removal failed.',
      ),
  run: async (args, io) => {
    const queue = await openQueueOf(args);
    const keep = args['keep'] === undefined ? 0 : parseInteger(args['keep'], 'keep');
    const olderThanMs = args['older-than'] === undefined ? 0 : parseDuration(args['older-than'], 'older-than');
    const dryRun = args['dry-run'] === true;
    const result = await gc(queue, { keep: Math.max(0, keep), olderThanMs, dryRun });
    if (args['json'] === true) {
      io.stdout(jsonText({ dryRun, ...result }));
      return EXIT.OK;
    }
    const verb = dryRun ? 'would remove' : 'removed';
    for (const id of result.jobs) io.stdout(`${verb} job ${id}\n`);
    for (const skipped of result.skipped) io.stderr(`fsjob: left job ${skipped.id} alone: ${skipped.reason}\n`);
    io.stdout(
      `${verb} ${plural(result.jobs.length, 'finished job')}, ${plural(result.readyEntries.length, 'ready entry', 'ready entries')}, ${plural(result.holds.length, 'old hold')}, ` +
        `${plural(result.temps.length, 'stale temporary', 'stale temporaries')}; kept ${plural(result.kept, 'finished job')}\n`,
    );
    return EXIT.OK;
  },
};
