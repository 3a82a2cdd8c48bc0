/**
 * `fsjob retry ID`: enqueue a new job from a finished job's spec, labelled retry-of=ID.
 * This module declares its options and help; retry-run.ts runs it, loaded only then.
 */
import type { FsjobCommand } from '../command.ts';
import { withQueue } from '../queue-option.ts';

export const retryCommand: FsjobCommand = {
  builder: (yargs) =>
    withQueue(yargs)
      .positional('id', { describe: 'The finished job to repeat: its id or a unique prefix', type: 'string' })
      .option('json', { describe: 'Print the new spec record instead of the id', type: 'boolean', default: false })
      .example('$0 retry 3fa2c1d0', 'run a failed job again; prints the new job id')
      .example('for id in $($0 status --status failed --json | jq -r ".jobs[].id"); do $0 retry $id; done', 'retry every failed job')
      .epilog(
        'A finished job keeps its receipt forever (RCPT-6); a retry is a new job: new id, new attempts, the same dedupe key (exit 3 while another unfinished job holds it). ' +
          'Its dependencies (--after) are copied as they are: one that failed cancels the retry too, unrun (retry that one first, then enqueue this anew with --after the new id; a warning says so). A hold (--hold) is not copied: the retry runs when a worker is free. ' +
          'Exit status: 0 enqueued, 1 its spec or stdin cannot be copied, 2 the job is not finished, 3 dedupe key held, 4 no such job.',
      ),
  run: async (args, io) => (await import('./retry-run.ts')).runRetry(args, io),
};
