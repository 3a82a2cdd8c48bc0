/**
 * `fsjob wait ID...|-|--all|--lane L|--label K=V [--timeout S] [--json]`:
 * block until the jobs have receipts, printing each as it finishes; exit with
 * the job's exit code (EXEC-10), for many jobs the summary's (summaryExitCode).
 * This module declares its options and help; wait-run.ts runs it, loaded only then.
 */
import type { FsjobCommand } from '../command.ts';
import { withQueue } from '../queue-option.ts';

export const waitCommand: FsjobCommand = {
  builder: (yargs) =>
    withQueue(yargs)
      .positional('ids', { describe: 'Job ids as fsjob enqueue printed them, or unique prefixes of them; - reads them from standard input, one per line', type: 'string' })
      .option('all', { describe: 'Wait for every job unfinished when the wait starts (held and blocked ones too: release or cancel a held job, or the wait goes on)', type: 'boolean' })
      .option('lane', { describe: 'Wait for the jobs of this lane unfinished when the wait starts', type: 'string' })
      .option('label', { describe: 'Wait for the jobs with label NAME=VALUE unfinished when the wait starts (repeatable: each must match)', type: 'string' })
      .option('timeout', { describe: 'Give up after this long (seconds, or 30s, 10m, 2h) and exit 75', type: 'string' })
      .option('json', { describe: 'Print each receipt record as one line of JSON as its job finishes', type: 'boolean', default: false })
      .example('$0 wait $id', 'block until the job is finished; $? is its exit code')
      .example('$0 wait --timeout 5m $id || echo "failed or still running: $?"', 'bounded wait')
      .example('$0 wait $a $b $c', 'wait for all three; exit 0 only when each succeeded')
      .example('$0 enqueue --batch jobs.txt | $0 wait -', 'wait for exactly the jobs just enqueued')
      .example('$0 wait --all', 'until everything in the queue now has finished')
      .example('$0 wait --lane render --label batch=42', 'the unfinished jobs of lane render labelled batch=42')
      .example('$0 wait --json --all | jq -r "select(.outcome != \\"succeeded\\") | .job_id"', 'the jobs that did not succeed, as they finish')
      .example('$0 wait --json --timeout 1h --all | jq -r ".error.job_ids[]?"', 'after an hour, the ids of the jobs still unfinished')
      .epilog(
        'Each job gets one line as it finishes (with --json: its receipt record, one JSON object per line); jobs finished already come first. ' +
          '--all, --lane and --label wait for the jobs without a receipt when the wait starts: jobs enqueued later are not waited for, jobs finished before are not reported ' +
          '(fsjob status --label NAME=VALUE --status failed lists those); to wait for exactly the jobs you enqueue, pipe their ids in: fsjob enqueue ... | fsjob wait -. ' +
          "Exit status when every job finished: for one job its exit_code (EXEC-10): the command's own status for succeeded (0) and failed, " +
          '124 timed out or expired, 125 lost, 126 rejected, 130 cancelled, 137 force-stopped. ' +
          'For several jobs: 0 only when every one succeeded, else the exit code of the first that did not, in the order named or read (by --all, --lane, --label: enqueue order), whatever order they finished in. ' +
          'No job to wait for (nothing unfinished matches): 0, and a message on stderr. ' +
          "When --timeout elapses first: 75, and a message names the jobs still unfinished (a few, and how many more; with --json the error's job_ids lists every one, in order). " +
          'While a job waits and no live worker serves the queue, a message on stderr says so; so does one for a held job, or a job blocked behind a held one, naming the job to release. ' +
          "fsjob's own failures: 2 usage, 4 no such job, 1 anything else. These overlap a command's own codes; --json prints the receipts when it matters.",
      ),
  run: async (args, io) => (await import('./wait-run.ts')).runWait(args, io),
};
