/** `fsjob wait ID [--timeout S]`: block until the job has a receipt; exit with its exit code (EXEC-10). */
import { waitFor } from '../../producer/index.ts';
import type { FsjobCommand } from '../command.ts';
import { jobIdOf, jsonText, openQueueOf, withQueue } from '../queue-arg.ts';
import { parseDuration } from '../units.ts';

export const waitCommand: FsjobCommand = {
  command: 'wait <id>',
  describe: "Wait until a job finishes; exit with the job's exit code",
  builder: (yargs) =>
    withQueue(yargs)
      .positional('id', { describe: 'The job id fsjob enqueue printed', type: 'string' })
      .option('timeout', { describe: 'Give up after this long (seconds, or 30s, 10m, 2h) and exit 75', type: 'string' })
      .option('json', { describe: 'Print the receipt record as JSON', type: 'boolean', default: false })
      .example('$0 wait $id', 'block until the job is finished; $? is its exit code')
      .example('$0 wait --timeout 5m $id || echo "failed or still running: $?"', 'bounded wait')
      .example('$0 wait --json $id | jq .outcome', 'the receipt')
      .epilog(
        "Exit status when the job finished: the job's exit_code (EXEC-10): the command's own status for succeeded (0) and failed, " +
          '124 timed out or expired, 125 lost, 126 rejected, 130 cancelled, 137 force-stopped. ' +
          'When --timeout elapses first: 75, and a message says the job is still unfinished. ' +
          "fsjob's own failures: 2 usage, 4 no such job, 1 anything else. These overlap a command's own codes; --json prints the receipt when it matters.",
      ),
  run: async (args, io) => {
    const queue = await openQueueOf(args);
    const id = jobIdOf(args);
    const timeoutMs = args['timeout'] === undefined ? undefined : parseDuration(args['timeout'], 'timeout');
    const receipt = await waitFor(queue, id, timeoutMs === undefined ? {} : { timeoutMs });
    if (args['json'] === true) io.stdout(jsonText(receipt));
    else io.stdout(`${id} ${receipt.outcome} (exit code ${receipt.exit_code})${receipt.message === null ? '' : `: ${receipt.message}`}\n`);
    return receipt.exit_code;
  },
};
