/** What `fsjob retry` does once its options are parsed (commands/retry.ts declares them). */
import type { CliIo } from '../command.ts';
import { EXIT } from '../exit.ts';
import { unsatisfiable } from '../../model/gates.ts';
import { retry } from '../../producer/retry.ts';
import { jobIdOf, openQueueOf } from '../queue-arg.ts';

/** Runs `fsjob retry` with yargs' parsed arguments; resolves to the exit status. */
export async function runRetry(args: Record<string, unknown>, io: CliIo): Promise<number> {
  const queue = await openQueueOf(args);
  const id = await jobIdOf(args, queue);
  const enqueued = await retry(queue, id);
  // Its dependencies are copied as they were (retry.ts): one that failed cancels the retry too (AFTER-3), said now.
  if (enqueued.gated) for (const warning of await unsatisfiable(queue, enqueued.spec)) io.stderr(`fsjob: warning: ${warning}\n`);
  io.stdout(args['json'] === true ? `${JSON.stringify(enqueued.spec)}\n` : `${enqueued.id}\n`);
  return EXIT.OK;
}
