/** `fsjob release ID... | --lane L | --label K=V`: release held jobs (HOLD-2). */
import { FsjobError } from '../../base/errors.ts';
import { parsePairs } from '../../base/units.ts';
import { release, releaseWhere, type ReleaseResult } from '../../producer/release.ts';
import type { FsjobCommand } from '../command.ts';
import { EXIT } from '../exit.ts';
import { jobIdsOf, jsonText, openQueueOf, withQueue } from '../queue-arg.ts';

function describe(result: ReleaseResult): string {
  const released = result.published ? 'released' : 'was released already';
  return result.next === 'open' ? `${result.id} ${released}; it runs when a worker is free` : `${result.id} ${released}; it still waits for ${result.waitingFor ?? 'its dependencies'}`;
}

export const releaseCommand: FsjobCommand = {
  builder: (yargs) =>
    withQueue(yargs)
      .positional('ids', { describe: 'Job ids, or unique prefixes of them', type: 'string', array: true })
      .option('lane', { describe: 'Release every held job of this lane', type: 'string' })
      .option('label', { describe: 'Release every held job with label NAME=VALUE (repeatable: all must match)', type: 'string' })
      .option('json', { describe: 'Print the results as JSON', type: 'boolean', default: false })
      .example('id=$($0 enqueue --hold -- ./migrate.sh) && $0 release $id', 'enqueue held, release later')
      .example('$0 release --lane render', 'release every held job of the render lane')
      .example('$0 release --label batch=nightly', 'release every held job labelled batch=nightly')
      .epilog(
        'A released job runs once its dependencies (--after) are satisfied, like any queued job. Releasing twice is fine. ' +
          'Exit status: 0 released, 1 a job was never held or is finished, 2 no ids and no --lane or --label, 4 no such job.',
      ),
  run: async (args, io) => {
    const queue = await openQueueOf(args);
    const lane = args['lane'] as string | undefined;
    const labels = parsePairs(args['label'], 'label');
    const ids = await jobIdsOf(args, queue);
    if (ids.length === 0 && lane === undefined && labels === undefined) {
      throw new FsjobError('USAGE', 'name the held jobs to release: ids, --lane L or --label NAME=VALUE');
    }
    const results: ReleaseResult[] = [];
    for (const id of ids) results.push(await release(queue, id));
    if (lane !== undefined || labels !== undefined) {
      const selected = await releaseWhere(queue, { ...(lane === undefined ? {} : { lane }), ...(labels === undefined ? {} : { labels }) });
      if (selected.length === 0 && ids.length === 0) io.stderr('fsjob: no held job matches; nothing released\n');
      results.push(...selected.filter((result) => !ids.includes(result.id)));
    }
    if (args['json'] === true) io.stdout(jsonText({ released: results.map((result) => ({ id: result.id, published: result.published, next: result.next, waiting_for: result.waitingFor })) }));
    else for (const result of results) io.stdout(`${describe(result)}\n`);
    return EXIT.OK;
  },
};
