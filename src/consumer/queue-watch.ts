/**
 * What a long-running consumer watches in a queue: ready/ feeds its view of
 * the index (ready-view.ts) and wakes it, jobs/ only wakes it. A watch is a
 * shortcut, never the truth: without inotify, or after a watch failed, the
 * view is listed at every scan and the poll finds the work anyway.
 */
import { watch, type FSWatcher } from 'node:fs';
import type { Queue } from '../model/queue.ts';
import { gateMayHaveOpened } from './gates.ts';
import type { ReadyView } from './ready-view.ts';

/** Starts the watchers of `queue`; `wake` is called after every event (after the view has taken it in). */
export function watchQueue(queue: Queue, view: ReadyView, wake: () => void): FSWatcher[] {
  const watchers: FSWatcher[] = [];
  for (const dir of ['ready', 'jobs'] as const) {
    try {
      const onEvent =
        dir === 'ready'
          ? (_event: string, name: string | Buffer | null) => readyChanged(queue, view, name, wake)
          : (_event: string, name: string | Buffer | null) => {
              // A job's open name appearing may be its gate opening (GATE-3): the next scan looks at it again.
              if (typeof name === 'string') gateMayHaveOpened(view, name);
              wake();
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

/** A watch event of ready/: one lstat says whether the entry came or went (the event's kind is not trusted). */
function readyChanged(queue: Queue, view: ReadyView, name: string | Buffer | null, wake: () => void): void {
  if (typeof name !== 'string') {
    view.invalidate();
    wake();
    return;
  }
  queue.dirs.ready.present(name).then(
    (exists) => view.changed(name, exists),
    () => view.invalidate(),
  ).finally(wake);
}
