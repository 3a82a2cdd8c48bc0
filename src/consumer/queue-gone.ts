/**
 * WORKER-4, seed 000's abandoned-root check: is the queue a worker opened
 * still at its root? A worker asks when a scan fails and at each renewal of
 * its registration (worker.ts).
 */
import { FsjobError } from '../base/errors.ts';
import type { Queue } from '../model/queue.ts';
import { openWith, type Context } from './context.ts';

/**
 * The error to stop with when `queue` is no longer at its root (removed, or
 * replaced by another queue), else undefined. Nothing is recreated there
 * (LAYOUT-2: no queue without fsjob.json). Other failures (EIO, EMFILE) may
 * pass and are retried at the next turn, so they give undefined too.
 */
export async function queueGone(queue: Queue, ctx: Context): Promise<FsjobError | undefined> {
  const { root } = queue;
  try {
    const now = await openWith(root, ctx);
    if (now.record.queue_id === queue.record.queue_id) return undefined;
    return new FsjobError('NOT_A_QUEUE', `${root} now holds another queue (queue_id ${now.record.queue_id}, was ${queue.record.queue_id}); stopping the worker of the removed queue`, {
      path: root,
      clause: 'WORKER-4',
    });
  } catch (error) {
    if (!(error instanceof FsjobError) || (error.code !== 'NOT_A_QUEUE' && error.code !== 'NOT_FOUND')) return undefined;
    return new FsjobError('NOT_A_QUEUE', `the queue ${root} was removed while this worker served it (${error.message}); stopping the abandoned worker`, {
      path: root,
      clause: 'WORKER-4',
      cause: error,
    });
  }
}
