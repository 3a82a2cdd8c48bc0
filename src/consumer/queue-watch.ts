/**
 * What a long-running consumer watches in a queue: ready/ feeds its view of
 * the index (ready-view.ts) and says when a dependency a blocked job awaits
 * may have finished (gates.ts), jobs/ says when a job was published (the
 * consumer decides whether either wakes it: pool.ts). A watch is a shortcut,
 * never the truth: without inotify, or after a watch failed, the view is
 * listed at every scan and the poll finds the work anyway.
 */
import { watch, type FSWatcher } from 'node:fs';
import type { Queue } from '../model/queue.ts';
import { awaitedEntryChanged, gateMayHaveOpened } from './gates.ts';
import type { ReadyView } from './ready-view.ts';

/**
 * Starts the watchers of `queue`: ready/ feeds `view` (no wake-up for a new
 * entry: its job is not published yet, ENQ-2 before ENQ-3; one for the
 * entry of a dependency a blocked job awaits, AFTER-4); jobs/ calls
 * `published` after every event, the moment a new job can be claimed.
 */
export function watchQueue(queue: Queue, view: ReadyView, published: () => void): FSWatcher[] {
  const watchers: FSWatcher[] = [];
  for (const dir of ['ready', 'jobs'] as const) {
    try {
      const onEvent =
        dir === 'ready'
          ? (_event: string, name: string | Buffer | null) => {
              readyChanged(view, name);
              if (typeof name === 'string' && awaitedEntryChanged(view, name)) published();
            }
          : (_event: string, name: string | Buffer | null) => {
              // A job's open name appearing may be its gate opening (GATE-3): the next scan looks at it again.
              if (typeof name === 'string') gateMayHaveOpened(view, name);
              published();
            };
      const watcher = watch(queue.paths.dir(dir), { persistent: false }, onEvent);
      watcher.on('error', () => {
        // A watch that failed feeds nothing more: the view is listed at every scan again.
        if (dir === 'ready') view.watched = false;
      });
      watchers.push(watcher);
      if (dir === 'ready') view.watched = true;
    } catch {
      // No inotify: the poll finds the work anyway (the view is then listed at every scan).
    }
  }
  return watchers;
}

/**
 * A watch event of ready/: the name is noted, and the view looks at it
 * (one lstat: the event's kind is not trusted) when it is next used, so a
 * busy consumer pays nothing more for the jobs others run.
 */
function readyChanged(view: ReadyView, name: string | Buffer | null): void {
  if (typeof name === 'string') view.touched(name);
  else view.invalidate();
}
