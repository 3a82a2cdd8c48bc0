/** `fsjob cancel ID [--force] [--reason TEXT]`: CANCEL-1, and CANCEL-2 for a job nobody has claimed. */
import type { CancelResult } from '../../producer/index.ts';
import { CONTROL_LATENCY } from '../../base/constants.ts';
import type { FsjobCommand } from '../command.ts';
import { EXIT } from '../exit.ts';
import { cancelJson } from '../json-out.ts';
import { withoutClauseIds } from '../messages.ts';
import { cancel } from '../../producer/cancel.ts';
import { jobIdOf, jsonText, openQueueOf, withQueue } from '../queue-arg.ts';

function describe(result: CancelResult): string {
  const asked = result.published ? `${result.record} published` : `${result.record} was already there`;
  switch (result.next) {
    case 'finished':
      return result.receipt?.outcome === 'rejected'
        ? `${result.id} rejected: nobody had claimed it and its spec is invalid (${result.receipt.reason ?? 'invalid_spec'}), so it is finished now (exit code 126, CLAIM-10)`
        : `${result.id} cancelled: nobody had claimed it, so it is finished now (exit code 130)`;
    case 'owner':
      return `${result.id}: ${asked}; its owner stops it within ${CONTROL_LATENCY / 1000} s (CANCEL-3), or recovery does if the owner died. fsjob wait ${result.id} shows the outcome`;
    case 'claimed-elsewhere':
      return `${result.id}: ${asked}; a consumer claimed it at the same moment and will cancel it (CLAIM-6). fsjob wait ${result.id} shows the outcome`;
    case 'finished-elsewhere':
      return `${result.id}: ${asked}, but the job finished meanwhile; fsjob status ${result.id} shows how`;
  }
}

export const cancelCommand: FsjobCommand = {
  builder: (yargs) =>
    withQueue(yargs)
      .positional('id', { describe: 'The job id, or a unique prefix of it', type: 'string' })
      .option('force', { describe: 'Kill a running job at once (SIGKILL) instead of SIGTERM and a grace', type: 'boolean', default: false })
      .option('reason', { describe: 'Why, for the record (at most 1024 bytes)', type: 'string' })
      .option('json', { describe: 'Print the result as JSON', type: 'boolean', default: false })
      .example('$0 cancel $id', 'graceful: SIGTERM, SIGKILL after 10 s; outcome cancelled (130)')
      .example('$0 cancel --force --reason "runaway" $id', 'SIGKILL at once; outcome force_stopped (137)')
      .epilog('A cancelled job is never retried. Exit status: 0 the request stands (asking twice is fine), 1 the job already finished (the message gives its outcome), 4 no such job.'),
  run: async (args, io) => {
    const queue = await openQueueOf(args);
    const reason = args['reason'] as string | undefined;
    const result = await cancel(queue, await jobIdOf(args, queue), { force: args['force'] === true, ...(reason === undefined ? {} : { reason }) });
    if (args['json'] === true) io.stdout(jsonText(cancelJson(result)));
    else io.stdout(`${args['verbose'] === true ? describe(result) : withoutClauseIds(describe(result))}\n`);
    return EXIT.OK;
  },
};
