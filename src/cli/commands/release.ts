/**
 * `fsjob release ID... | --lane L | --label K=V`: release held jobs (HOLD-2).
 * This module declares its options and help; release-run.ts runs it, loaded only then.
 */
import type { FsjobCommand } from '../command.ts';
import { withQueue } from '../queue-option.ts';

export const releaseCommand: FsjobCommand = {
  builder: (yargs) =>
    withQueue(yargs)
      .positional('ids', { describe: 'Job ids, or unique prefixes of them', type: 'string', array: true })
      .option('lane', { describe: 'Release every held job of this lane', type: 'string' })
      .option('label', { describe: 'Release every held job with label NAME=VALUE (repeatable: all must match)', type: 'string' })
      .option('json', { describe: 'Print the results as JSON', type: 'boolean', default: false })
      .example('id=$($0 enqueue --hold -- ./migrate.sh) && $0 release $id', 'enqueue held, release later')
      .example('$0 release --lane render', 'release every held job of the render lane')
      .example('$0 release --label batch=nightly', 'release every held job labelled batch=nightly')
      .epilog(
        'A released job runs once its dependencies (--after) are satisfied, like any queued job. Releasing twice is fine. ' +
          'Of several ids, each is released or refused on its own (a refused one does not stop the others; --json lists it under refused). ' +
          'Exit status: 0 released, 1 a job was never held or is finished, 2 no ids and no --lane or --label, 4 no such job; of several ids, the status of the first refused, in the order named.',
      ),
  run: async (args, io) => (await import('./release-run.ts')).runRelease(args, io),
};
