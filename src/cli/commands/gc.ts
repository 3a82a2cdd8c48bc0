/**
 * `fsjob gc [ID...] [--all | --keep N | --older-than D]`: remove finished
 * jobs and what nobody needs (GC-1, GC-2, READY-3, TEMP-1). One line of
 * summary (every job removed with --verbose), progress on a terminal.
 */
import { FsjobError } from '../../base/errors.ts';
// Every finished job's receipt is read: with ajv's compiled code (src/records/compiled.ts).
import '../../records/compiled.ts';
import type { FsjobCommand } from '../command.ts';
import { EXIT } from '../exit.ts';
import { gcJson } from '../json-out.ts';
import { progressWanted, startProgress } from '../progress.ts';
import { gc } from '../../producer/gc.ts';
import { jobIdsOf, jsonText, openQueueOf, withQueue } from '../queue-arg.ts';
import { parseDuration, parseInteger } from '../../base/units.ts';

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

export const gcCommand: FsjobCommand = {
  builder: (yargs) =>
    withQueue(yargs)
      .positional('ids', { describe: 'Remove only these finished jobs (ids or unique prefixes)', type: 'string' })
      .option('all', { describe: 'Remove every finished job (needed when no id, --keep or --older-than says which)', type: 'boolean', default: false })
      .option('keep', { describe: 'Keep the N most recently finished jobs', type: 'number' })
      .option('older-than', { describe: 'Remove only jobs that finished at least this long ago: 30s, 10m, 2h, 7d', type: 'string' })
      .option('dry-run', { describe: 'Say what would be removed; remove nothing', type: 'boolean', default: false })
      .option('json', { describe: 'Print what was removed as JSON', type: 'boolean', default: false })
      .example('$0 gc --older-than 7d', 'remove jobs that finished more than a week ago')
      .example('$0 gc --keep 1000', 'keep the 1000 most recently finished jobs')
      .example('$0 gc 3fa2c1d0', 'remove one finished job')
      .example('$0 gc --all', 'remove every finished job')
      .example('$0 gc --dry-run --all --json | jq ".jobs | length"', 'how many jobs a gc --all would remove')
      .epilog(
        'A job is removed only when it has a valid receipt (GC-1): it is renamed out of jobs/ (it disappears at once) and then deleted. One line says what was removed; --verbose lists every job too. ' +
          'Which finished jobs go must be said: job ids, --keep, --older-than, or --all for every one; stale ready entries, holds and temporaries are always collected. ' +
          'Exit status: 0 done, 1 the queue cannot be read, a removal failed, or a named job is not finished.',
      ),
  run: async (args, io) => {
    const queue = await openQueueOf(args);
    const named = ((args['ids'] as unknown[] | undefined) ?? []).length > 0;
    const ids = named ? await jobIdsOf(args, queue) : undefined;
    const all = args['all'] === true;
    if (!all && !named && args['keep'] === undefined && args['older-than'] === undefined) {
      throw new FsjobError('USAGE', 'gc removes finished jobs: say which with job ids, --keep N, --older-than 7d, or --all for every finished job');
    }
    if (all && named) throw new FsjobError('USAGE', 'give job ids or --all, not both');
    const keep = args['keep'] === undefined ? 0 : parseInteger(args['keep'], 'keep', { min: 0 });
    const olderThanMs = args['older-than'] === undefined ? 0 : parseDuration(args['older-than'], 'older-than', { min: 0 });
    const dryRun = args['dry-run'] === true;
    const shown = progressWanted(io, args);
    const examining = startProgress(io, 'gc: examining', 'jobs', shown);
    const removing = startProgress(io, dryRun ? 'gc: would remove' : 'gc: removing', 'jobs', shown);
    let result;
    try {
      result = await gc(queue, {
        keep,
        olderThanMs,
        dryRun,
        ...(ids === undefined ? {} : { ids }),
        onProgress: ({ phase, done, total }) => {
          const progress = phase === 'examining' ? examining : removing;
          if (phase === 'removing' && done === 0) examining.end();
          progress.total(total);
          if (done > 0) progress.add();
        },
      });
    } finally {
      examining.end();
      removing.end();
    }
    const failed = ids !== undefined && result.skipped.length > 0;
    if (args['json'] === true) {
      io.stdout(jsonText(gcJson(result, dryRun)));
      return failed ? EXIT.FAILURE : EXIT.OK;
    }
    const verb = dryRun ? 'would remove' : 'removed';
    if (args['verbose'] === true) for (const id of result.jobs) io.stdout(`${verb} job ${id}\n`);
    for (const skipped of result.skipped) io.stderr(`fsjob: left job ${skipped.id} alone: ${skipped.reason}\n`);
    io.stdout(
      `${verb} ${plural(result.jobs.length, 'finished job')}, ${plural(result.readyEntries.length, 'ready entry', 'ready entries')}, ${plural(result.holds.length, 'old hold')}, ` +
        `${plural(result.temps.length, 'stale temporary', 'stale temporaries')}; kept ${plural(result.kept, 'finished job')}\n`,
    );
    return failed ? EXIT.FAILURE : EXIT.OK;
  },
};
