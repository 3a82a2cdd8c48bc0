/**
 * `fsjob gc [ID...] [--all | --keep N | --older-than D]`: remove finished
 * jobs and what nobody needs (GC-1, GC-2, READY-3, TEMP-1). One line of
 * summary (every job removed with --verbose), progress on a terminal.
 * This module declares its options and help; gc-run.ts runs it, loaded only then.
 */
import type { FsjobCommand } from '../command.ts';
import { withQueue } from '../queue-option.ts';

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
          'A job that cannot be read or moved (EACCES) is listed and left as it is; the others are still collected. Exit status: 0 done, 1 the queue cannot be read, a job could not be examined or removed, or a named job is not finished.',
      ),
  run: async (args, io) => (await import('./gc-run.ts')).runGc(args, io),
};
