/** `fsjob wait ID... [--timeout S]`: block until the jobs have receipts; exit with the job's exit code (EXEC-10). */
import type { ReceiptRecord } from '../../records/codec.ts';
import type { FsjobCommand } from '../command.ts';
import { EXIT } from '../exit.ts';
import { withoutClauseIds } from '../messages.ts';
import { waitFor } from '../../producer/watch.ts';
import { jobIdsOf, jsonText, openQueueOf, withQueue } from '../queue-arg.ts';
import { noticeUnserved } from '../../producer/service-notice.ts';
import { parseDuration } from '../../base/units.ts';

export const waitCommand: FsjobCommand = {
  builder: (yargs) =>
    withQueue(yargs)
      .positional('ids', { describe: 'Job ids as fsjob enqueue printed them, or unique prefixes of them', type: 'string' })
      .option('timeout', { describe: 'Give up after this long (seconds, or 30s, 10m, 2h) and exit 75', type: 'string' })
      .option('json', { describe: 'Print the receipt record as JSON (several ids: {"receipts": [...]})', type: 'boolean', default: false })
      .example('$0 wait $id', 'block until the job is finished; $? is its exit code')
      .example('$0 wait --timeout 5m $id || echo "failed or still running: $?"', 'bounded wait')
      .example('$0 wait $a $b $c', 'wait for all three; exit 0 only when each exited 0')
      .example('$0 wait --json $id | jq .outcome', 'the receipt')
      .epilog(
        "Exit status when the job finished: the job's exit_code (EXEC-10): the command's own status for succeeded (0) and failed, " +
          '124 timed out or expired, 125 lost, 126 rejected, 130 cancelled, 137 force-stopped. ' +
          'With several ids: 0 when every job exited 0, else the exit code of the first job named that did not. ' +
          'When --timeout elapses first: 75, and a message says which job is still unfinished. ' +
          'While a job waits and no live worker serves the queue, a message on stderr says so. ' +
          "fsjob's own failures: 2 usage, 4 no such job, 1 anything else. These overlap a command's own codes; --json prints the receipt when it matters.",
      ),
  run: async (args, io) => {
    const queue = await openQueueOf(args);
    const ids = await jobIdsOf(args, queue);
    const timeoutMs = args['timeout'] === undefined ? undefined : parseDuration(args['timeout'], 'timeout');
    const stopNotice = noticeUnserved(queue, ids, io);
    const deadline = timeoutMs === undefined ? undefined : performance.now() + timeoutMs; // monotonic: --timeout is a length of time, whatever the wall clock does
    const receipts: ReceiptRecord[] = [];
    try {
      // One after the other: the total wait is bounded by --timeout, and a finished job answers at once.
      for (const id of ids) {
        const left = deadline === undefined ? undefined : Math.max(0, Math.round(deadline - performance.now()));
        // The notice above watches every id at once, so waitFor's own for one id stays quiet.
        receipts.push(await waitFor(queue, id, { unservedNotice: false, ...(left === undefined ? {} : { timeoutMs: left }) }));
      }
    } finally {
      stopNotice();
    }
    if (args['json'] === true) io.stdout(jsonText(receipts.length === 1 ? receipts[0] : { receipts }));
    else {
      for (const receipt of receipts) {
        const line = `${receipt.job_id} ${receipt.outcome} (exit code ${receipt.exit_code})${receipt.message === null ? '' : `: ${receipt.message}`}\n`;
        io.stdout(args['verbose'] === true ? line : withoutClauseIds(line));
      }
    }
    return receipts.find((receipt) => receipt.exit_code !== 0)?.exit_code ?? EXIT.OK;
  },
};
