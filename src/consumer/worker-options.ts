/**
 * What a Worker takes (WorkerOptions) and the check of it at \`new Worker\`:
 * a JavaScript caller gets USAGE naming the option (its \`field\`) for what
 * would otherwise fail deep inside or take a default in silence.
 */
import { FsjobError } from '../base/errors.ts';
import { checkBoolean, checkChoice, checkInstance, checkInteger, describe } from '../base/option-checks.ts';
import { assertQueue, type Queue } from '../model/queue.ts';
import { checkConsumerOptions, type ConsumerOptions } from './context.ts';
import { Guardian } from './guardian.ts';
import { Spawner } from './spawner.ts';

/** CLAIM-8's bound on a Worker's concurrency. */
const CONCURRENCY_MAX = 1024;

/** How long a Worker runs: 'serve' until stop(), 'drain' until nothing it can run is left, 'once' one job. */
export type WorkerMode = 'serve' | 'drain' | 'once';

/** Options of a Worker: the queues it serves, how many jobs at once, and for how long. */
export interface WorkerOptions extends ConsumerOptions {
  /** Queue roots (or opened queues) to serve, round-robin. */
  queues: readonly (string | Queue)[];
  /**
   * Jobs run at once, 1 to 1024 (CLAIM-8). Every fsync of a job holds one
   * of libuv's pool threads (UV_THREADPOOL_SIZE, 4 unless the environment
   * of the process sets it before it starts: no library code can size it),
   * so a Worker running more than 4 jobs wants UV_THREADPOOL_SIZE of about
   * its concurrency (up to 16; `fsjob work` sets it so itself).
   * @default 1
   */
  concurrency?: number;
  /**
   * 'serve': until stop(); 'drain': until no job remains that this worker can
   * make progress on (retry delays are waited out, jobs held by other live
   * consumers are not); 'once': one job, then as 'drain'. @default 'serve'
   */
  mode?: WorkerMode;
  /** Run command jobs (false: payload jobs only). @default true */
  commands?: boolean;
  /**
   * Longest wait in ms between two scans when no event arrives, 1 or more;
   * more than 1000 waits 1000 (a missed watch event is seen within a second).
   * @default 1000
   */
  pollMs?: number;
  /** The guardian (WORKER-2). @default a new Guardian */
  guardian?: Guardian;
  /** The process that forks every command (spawner.ts). @default a new Spawner */
  spawner?: Spawner;
}

/** How the checks name the caller. */
export const CALLER = 'new Worker';

/** WorkerOptions as a JavaScript caller may pass them: USAGE naming the option (its `field`) for what would otherwise fail deep inside or take a default silently. */
export function checkWorkerOptions(options: WorkerOptions): void {
  if (typeof options !== 'object' || options === null) throw new FsjobError('USAGE', `new Worker takes an options object ({ queues: [...] }), not ${describe(options)}`);
  checkConsumerOptions(options, CALLER);
  const queues: unknown = options.queues;
  // A string is iterable too: its characters would be opened as queues.
  if (!Array.isArray(queues)) throw new FsjobError('USAGE', `new Worker: option queues must be an array of queue roots or opened queues, not ${describe(queues)}`, { field: '/queues' });
  if (queues.length === 0) throw new FsjobError('USAGE', 'new Worker: option queues is empty; a worker needs at least one queue', { field: '/queues' });
  queues.forEach((queue: unknown, index) => {
    if (typeof queue === 'string' && queue !== '') return;
    try {
      assertQueue(queue, `new Worker's queues[${index}]`);
    } catch (error) {
      throw new FsjobError('USAGE', `new Worker: queues[${index}] must be a queue root (a path) or an opened Queue, not ${describe(queue)}`, { field: `/queues/${index}`, cause: error });
    }
  });
  checkInteger(options, CALLER, 'concurrency', 1, CONCURRENCY_MAX, 'CLAIM-8');
  checkChoice(options, CALLER, 'mode', ['serve', 'drain', 'once']);
  checkBoolean(options, CALLER, 'commands');
  checkInteger(options, CALLER, 'pollMs', 1, Number.MAX_SAFE_INTEGER);
  checkInstance(options, CALLER, 'guardian', Guardian, 'a Guardian');
  checkInstance(options, CALLER, 'spawner', Spawner, 'a Spawner');
}
