/** What `fsjob release` does once its options are parsed (commands/release.ts declares them). */
import { FsjobError, isFsjobError } from '../../base/errors.ts';
import { parsePairs } from '../../base/units.ts';
import { release, releaseWhere, type ReleaseResult } from '../../producer/release.ts';
import type { CliIo } from '../command.ts';
import { EXIT, exitStatusOf } from '../exit.ts';
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
  // One job named alone: its refusal is the command's (exit status and --json error line as every command's).
  // Several: each is released or refused on its own, and every result is reported, so a refusal of one
  // never hides that the jobs before it were released nor leaves those after it held.
  const alone = ids.length === 1 && lane === undefined && labels === undefined;
  const results: ReleaseResult[] = [];
  const refused: { id: string; error: FsjobError }[] = [];
  for (const id of ids) {
    try {
      results.push(await release(queue, id));
    } catch (error) {
      if (alone || !isFsjobError(error)) throw error;
      refused.push({ id, error });
      io.stderr(`fsjob: ${error.message}\n`);
    }
  }
  if (lane !== undefined || labels !== undefined) {
    const selected = await releaseWhere(queue, { ...(lane === undefined ? {} : { lane }), ...(labels === undefined ? {} : { labels }) });
    if (selected.length === 0 && ids.length === 0) io.stderr('fsjob: no held job matches; nothing released\n');
    results.push(...selected.filter((result) => !ids.includes(result.id)));
  }
  if (args['json'] === true) {
    io.stdout(
      jsonText({
        released: results.map((result) => ({ id: result.id, published: result.published, next: result.next, waiting_for: result.waitingFor })),
        refused: refused.map(({ id, error }) => ({ id, error: error.toJSON() })),
      }),
    );
  } else for (const result of results) io.stdout(`${args['verbose'] === true ? describe(result) : withoutClauseIds(describe(result))}\n`);
  // The first refusal in the order named decides, as fsjob wait's first job that did not succeed does.
  const first = refused[0];
  return first === undefined ? EXIT.OK : exitStatusOf(first.error.code);
}
