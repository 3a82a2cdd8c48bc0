/** What `fsjob pause` and `fsjob resume` do once their options are parsed (commands/pause.ts declares them). */
import type { CliIo } from '../command.ts';
import { EXIT } from '../exit.ts';
import { pauseQueue, resumeQueue } from '../../model/pause.ts';
import { jsonText, openQueueOf } from '../queue-arg.ts';

/** Runs `fsjob pause` with yargs' parsed arguments; resolves to the exit status. */
export async function runPause(args: Record<string, unknown>, io: CliIo): Promise<number> {
  const queue = await openQueueOf(args);
  const reason = args['reason'] as string | undefined;
  const { published, record } = await pauseQueue(queue, reason === undefined ? {} : { reason });
  if (args['json'] === true) io.stdout(jsonText({ queue: queue.root, published, pause: record }));
  else if (published) io.stdout(`paused ${queue.root}: no job is claimed until fsjob resume\n`);
  else io.stdout(`${queue.root} was paused already${record === null ? '' : ` (since ${new Date(record.paused_ms).toISOString()}${record.reason === null ? '' : `: ${record.reason}`})`}\n`);
  return EXIT.OK;
}

/** Runs `fsjob resume` with yargs' parsed arguments; resolves to the exit status. */
export async function runResume(args: Record<string, unknown>, io: CliIo): Promise<number> {
  const queue = await openQueueOf(args);
  const resumed = await resumeQueue(queue);
  if (args['json'] === true) io.stdout(jsonText({ queue: queue.root, resumed }));
  else io.stdout(resumed ? `resumed ${queue.root}\n` : `${queue.root} was not paused\n`);
  return EXIT.OK;
}
