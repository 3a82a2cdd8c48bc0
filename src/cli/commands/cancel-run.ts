/** What `fsjob cancel` does once its options are parsed (commands/cancel.ts declares them). */
import type { CancelResult } from '../../producer/index.ts';
import { CONTROL_LATENCY } from '../../base/constants.ts';
import type { CliIo } from '../command.ts';
import { eachJob, refusalStatus, refusedJson } from '../each-job.ts';
import { cancelJson } from '../json-out.ts';
import { withoutClauseIds } from '../messages.ts';
import { cancel } from '../../producer/cancel.ts';
import { jobIdsOf, jsonText, openQueueOf } from '../queue-arg.ts';

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

/** Runs `fsjob cancel` with yargs' parsed arguments; resolves to the exit status. */
export async function runCancel(args: Record<string, unknown>, io: CliIo): Promise<number> {
  const queue = await openQueueOf(args);
  const reason = args['reason'] as string | undefined;
  const ids = await jobIdsOf(args, queue);
  // One id: the output scripts parse today (one result; a refusal is the command's). Several: each
  // cancelled or refused on its own (each-job.ts), --json {cancelled, refused} as release's.
  const alone = ids.length === 1;
  const { done, refused } = await eachJob(ids, alone, io, (id) => cancel(queue, id, { force: args['force'] === true, ...(reason === undefined ? {} : { reason }) }));
  if (args['json'] === true) io.stdout(jsonText(alone ? cancelJson(done[0] as CancelResult) : { cancelled: done.map(cancelJson), refused: refusedJson(refused) }));
  else for (const result of done) io.stdout(`${args['verbose'] === true ? describe(result) : withoutClauseIds(describe(result))}\n`);
  return refusalStatus(refused);
}
