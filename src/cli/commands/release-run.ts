/** What `fsjob release` does once its options are parsed (commands/release.ts declares them). */
import { FsjobError } from '../../base/errors.ts';
import { parsePairs } from '../../base/units.ts';
import { release, releaseWhere, type ReleaseResult } from '../../producer/release.ts';
import type { CliIo } from '../command.ts';
import { eachJob, refusalStatus, refusedJson } from '../each-job.ts';
import { withoutClauseIds } from '../messages.ts';
import { jobIdsOf, jsonText, openQueueOf } from '../queue-arg.ts';

function describe(result: ReleaseResult): string {
  const released = result.published ? 'released' : 'was released already';
  return result.next === 'open' ? `${result.id} ${released}; it runs when a worker is free` : `${result.id} ${released}; it still waits for ${result.waitingFor ?? 'its dependencies'}`;
}

/** Runs `fsjob release` with yargs' parsed arguments; resolves to the exit status. */
export async function runRelease(args: Record<string, unknown>, io: CliIo): Promise<number> {
  const queue = await openQueueOf(args);
  const lane = args['lane'] as string | undefined;
  // No job has the lane "" (enqueue refuses it): `--lane "$LANE"` with LANE unset would release nothing and exit 0.
  if (lane === '') throw new FsjobError('USAGE', '--lane was given an empty value; name the lane (enqueue --lane L gave it its name)');
  const labels = parsePairs(args['label'], 'label');
  const ids = await jobIdsOf(args, queue);
  if (ids.length === 0 && lane === undefined && labels === undefined) {
    throw new FsjobError('USAGE', 'name the held jobs to release: ids, --lane L or --label NAME=VALUE');
  }
  // One job named alone: its refusal is the command's; several: each released or refused on its own (each-job.ts).
  const alone = ids.length === 1 && lane === undefined && labels === undefined;
  const { done: results, refused } = await eachJob(ids, alone, io, (id) => release(queue, id));
  if (lane !== undefined || labels !== undefined) {
    const selected = await releaseWhere(queue, { ...(lane === undefined ? {} : { lane }), ...(labels === undefined ? {} : { labels }) });
    if (selected.length === 0 && ids.length === 0) io.stderr('fsjob: no held job matches; nothing released\n');
    results.push(...selected.filter((result) => !ids.includes(result.id)));
  }
  if (args['json'] === true) {
    io.stdout(
      jsonText({
        released: results.map((result) => ({ id: result.id, published: result.published, next: result.next, waiting_for: result.waitingFor })),
        refused: refusedJson(refused),
      }),
    );
  } else for (const result of results) io.stdout(`${args['verbose'] === true ? describe(result) : withoutClauseIds(describe(result))}\n`);
  return refusalStatus(refused);
}
