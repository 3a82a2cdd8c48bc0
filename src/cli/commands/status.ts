/**
 * `fsjob status [ID]`: a table of jobs and workers, or one job in full (STATUS-1, WORKER-1).
 * This module declares its options and help; status-run.ts runs it, loaded only then.
 */
import type { FsjobCommand } from '../command.ts';
import { withQueue } from '../queue-option.ts';
import { DEFAULT_LIMIT, EXACT_COUNT_MAX, OUTCOMES, STATUSES } from './status-options.ts';

export const statusCommand: FsjobCommand = {
  builder: (yargs) =>
    withQueue(yargs)
      .positional('id', { describe: 'A job id or a unique prefix of one: show that job in full', type: 'string' })
      .option('limit', { describe: `Show at most N jobs, newest first (default ${DEFAULT_LIMIT}; 0 for all)`, type: 'number' })
      .option('status', { describe: 'Only jobs in these statuses or finished with these outcomes', choices: [...STATUSES, ...OUTCOMES.filter((outcome) => outcome !== 'expired')], type: 'string', array: true })
      .option('label', { describe: 'Only jobs with label NAME=VALUE (repeatable: each must match)', type: 'string' })
      .option('sort', { describe: 'Order: age (newest first, the default), priority (the order workers claim in: highest first, then oldest; finished jobs after, newest first) or duration (longest run first; reads the receipt of every finished job)', choices: ['age', 'priority', 'duration'], type: 'string' })
      .option('exact', { describe: `Count every job by status and outcome however many there are (done by default up to ${EXACT_COUNT_MAX} jobs; one look at each job)`, type: 'boolean', default: false })
      .option('json', { describe: 'Print the data as JSON', type: 'boolean', default: false })
      .example('$0 status', 'counts, the 20 newest jobs and the registered workers')
      .example('$0 status --exact', 'on a big queue: every job counted by status and outcome (slower: one look at each job)')
      .example('$0 status --status failed lost --limit 0', 'every job that failed or was lost')
      .example('$0 status --status queued running', 'what waits and what runs')
      .example('$0 status --label batch=42 --status failed', 'what failed in one batch')
      .example('$0 status --sort duration --limit 5', 'the five longest runs')
      .example('$0 status --sort priority --status queued', 'what runs next')
      .example('$0 status 3fa2c1d0', 'one job in full, by a unique part of its id: spec, every generation, receipt, outputs')
      .example('$0 status --json | jq ".jobs[] | select(.status==\\"orphaned\\")"', 'machine-readable')
      .epilog(
        `Statuses are derived from the records on disk (STATUS-1): ${STATUSES.join(', ')}; ` +
          `a finished job has an outcome: ${OUTCOMES.join(', ')}. ` +
          'A held job runs once released (fsjob release), a blocked one once its dependencies (--after) allow. ' +
          `The counts at the top cover every job of the queue; over ${EXACT_COUNT_MAX} jobs they are the ready index's (unfinished and finished, from two listings) unless --exact. ` +
          'STARTED and FINISHED are local clock times (a date too when over a day away); STARTED is when the last attempt started (a job that waits for its first or next attempt shows -), DURATION is FINISHED - STARTED, or for a running job how long it has run so far. ' +
          'The JOBS column of a worker counts the open claims that name it (when counted; else what its registration says). ' +
          'Jobs the filesystem refuses to read (a directory of mode 0000: EACCES) are listed apart, on standard error (--json: unreadable, with the path and errno), and the others shown. ' +
          'Exit status: 0 shown, 1 the queue or some job (then listed apart) cannot be read, 4 no such job.',
      ),
  run: async (args, io) => (await import('./status-run.ts')).runStatus(args, io),
};
