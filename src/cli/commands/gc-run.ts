/** What `fsjob gc` does once its options are parsed (commands/gc.ts declares them). */
import { FsjobError } from '../../base/errors.ts';
// Every finished job's receipt is read: with ajv's compiled code (src/records/compiled.ts).
import '../../records/compiled.ts';
import type { CliIo } from '../command.ts';
import { EXIT } from '../exit.ts';
import { gcJson } from '../json-out.ts';
import { progressWanted, startProgress } from '../progress.ts';
import { gc } from '../../producer/gc.ts';
import { jobIdsOf, jsonText, openQueueOf } from '../queue-arg.ts';
import { parseDuration, parseInteger } from '../../base/units.ts';

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** Runs `fsjob gc` with yargs' parsed arguments; resolves to the exit status. */
export async function runGc(args: Record<string, unknown>, io: CliIo): Promise<number> {
  const queue = await openQueueOf(args);
  const named = ((args['ids'] as unknown[] | undefined) ?? []).length > 0;
  const ids = named ? await jobIdsOf(args, queue) : undefined;
  const all = args['all'] === true;
  if (!all && !named && args['keep'] === undefined && args['older-than'] === undefined) {
    throw new FsjobError('USAGE', 'gc removes finished jobs: say which with job ids, --keep N, --older-than 7d, or --all for every finished job');
  }
  if (all && named) throw new FsjobError('USAGE', 'give job ids or --all, not both');
  const keep = args['keep'] === undefined ? 0 : parseInteger(args['keep'], 'keep', { min: 0 });
  const olderThanMs = args['older-than'] === undefined ? 0 : parseDuration(args['older-than'], 'older-than', { min: 0 });
  const dryRun = args['dry-run'] === true;
  const shown = progressWanted(io, args);
  const examining = startProgress(io, 'gc: examining', 'jobs', shown);
  const removing = startProgress(io, dryRun ? 'gc: would remove' : 'gc: removing', 'jobs', shown);
  let result;
  try {
    result = await gc(queue, {
      keep,
      olderThanMs,
      dryRun,
      ...(ids === undefined ? {} : { ids }),
      onProgress: ({ phase, done, total }) => {
        const progress = phase === 'examining' ? examining : removing;
        if (phase === 'removing' && done === 0) examining.end();
        progress.total(total);
        if (done > 0) progress.add();
      },
    });
  } finally {
    examining.end();
    removing.end();
  }
  const failed = (ids !== undefined && result.skipped.length > 0) || result.failed.length > 0;
  if (args['json'] === true) {
    io.stdout(jsonText(gcJson(result, dryRun)));
    return failed ? EXIT.FAILURE : EXIT.OK;
  }
  const verb = dryRun ? 'would remove' : 'removed';
  if (args['verbose'] === true) for (const id of result.jobs) io.stdout(`${verb} job ${id}\n`);
  for (const skipped of result.skipped) io.stderr(`fsjob: left job ${skipped.id} alone: ${skipped.reason}\n`);
  for (const failure of result.failed) io.stderr(`fsjob: ${failure.id === null ? 'could not sweep the ready index' : `could not collect job ${failure.id}`}: ${failure.reason}\n`);
  io.stdout(
    `${verb} ${plural(result.jobs.length, 'finished job')}, ${plural(result.readyEntries.length, 'ready entry', 'ready entries')}, ${plural(result.holds.length, 'old hold')}, ` +
      `${plural(result.temps.length, 'stale temporary', 'stale temporaries')}; kept ${plural(result.kept, 'finished job')}\n`,
  );
  return failed ? EXIT.FAILURE : EXIT.OK;
}
