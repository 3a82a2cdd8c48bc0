/** What `fsjob init` does once its options are parsed (commands/init.ts declares them). */
import type { CliIo } from '../command.ts';
import { EXIT } from '../exit.ts';
import { initQueue } from '../../model/queue.ts';
import { jsonText, queuePathOf } from '../queue-arg.ts';

/** Runs `fsjob init` with yargs' parsed arguments; resolves to the exit status. */
export async function runInit(args: Record<string, unknown>, io: CliIo): Promise<number> {
  const queue = await initQueue(await queuePathOf(args));
  if (args['json'] === true) io.stdout(jsonText({ queue: queue.root, created: queue.created, record: queue.record }));
  else io.stdout(`${queue.created ? 'created queue' : 'already a queue:'} ${queue.root}\n`);
  return EXIT.OK;
}
