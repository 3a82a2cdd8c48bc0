/**
 * `waitFor`, `fsjob wait` and `fsjob logs --follow` on a job nobody will run
 * would block forever in silence. While they wait, this looks every few
 * seconds at the queue's worker registrations (WORKER-1) and the job's
 * status, and says once when the job waits with no live worker serving the
 * queue, and once when one shows up again; and once per job that waits for
 * a release: a held job, or a blocked one behind a held one. It only reads,
 * and what it says is advice: a one-shot consumer (fsjob-sh consume, a cron
 * job) serves a queue without registering, and claims decide, not
 * registrations.
 */
import { CallerCallbacks } from '../base/callbacks.ts';
import type { Queue } from '../model/queue.ts';

/** Where the advice goes: one line at a time, each ending in a newline (the CLI's io, or process.stderr). */
export interface NoticeSink {
  stderr: (text: string) => void;
}

/** First look after this long: a job that finishes at once needs no advice. */
const FIRST_LOOK_MS = 1500;
const LOOK_EVERY_MS = 5000;
/** Statuses in which a job needs a consumer to move on (STATUS-1). */
const WAITING = new Set(['queued', 'retrying', 'cancelling', 'expired', 'orphaned', 'delayed', 'blocked']);

async function pausedNow(queue: Queue): Promise<boolean> {
  const { isPaused } = await import('../model/pause.ts');
  return isPaused(queue);
}

/** Starts watching `ids` (a live set is read anew at each look: waitForMany passes the jobs still pending); the returned function stops it. */
export function noticeUnserved(queue: Queue, ids: Iterable<string>, io: NoticeSink): () => void {
  let served: boolean | undefined;
  let paused = false;
  let busy = false;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const held = new Set<string>();
  const behindHeld = new Set<string>();
  // Advice only: the sink's failure, a throw (caught below) or a rejection (held here, never
  // thrown: base/callbacks.ts), never ends the wait, and never the process as an unhandled rejection would.
  const sink = new CallerCallbacks();
  const say = (line: string): void => sink.call(io.stderr, line);
  const look = async (): Promise<void> => {
    if (busy || stopped) return;
    busy = true;
    try {
      const { liveWorkers } = await import('../producer/inspect.ts');
      const { listJob, deriveStatus } = await import('../model/job.ts');
      let waiting = false;
      for (const id of ids) {
        const files = await listJob(queue, id).catch(() => undefined);
        if (files === undefined) continue;
        const status = (await deriveStatus(queue, files)).status;
        // HOLD-1: a held job waits for a release, not for a worker: said once (for those looked at before the first waiting job).
        if (status === 'held' && !held.has(id) && !stopped) {
          held.add(id);
          say(`fsjob: job ${id} is held, so it waits until it is released (fsjob release -q ${queue.root} ${id})\n`);
        }
        // A job blocked behind a held one (its dependency, or one further up) waits for that release, however many workers serve the queue.
        if (status === 'blocked' && !behindHeld.has(id) && !stopped) {
          const { heldUpstream } = await import('../model/gates.ts');
          const upstream = await heldUpstream(queue, id);
          if (upstream !== undefined && !stopped) {
            behindHeld.add(id);
            say(`fsjob: job ${id} waits for job ${upstream}, which is held, so it runs only once that one is released (fsjob release -q ${queue.root} ${upstream})\n`);
          }
        }
        if (WAITING.has(status)) {
          waiting = true;
          break; // one waiting job is enough to advise; a wait on thousands looks at few
        }
      }
      const live = (await liveWorkers(queue)).filter((view) => view.record !== null && view.verdict !== 'dead' && view.record.mode !== 'stopping');
      const isPaused = waiting && (await pausedNow(queue));
      if (stopped) return;
      if (isPaused !== paused) {
        if (isPaused) say(`fsjob: ${queue.root} is paused, so the job waits until fsjob resume -q ${queue.root}\n`);
        else if (paused) say(`fsjob: ${queue.root} is resumed\n`);
        paused = isPaused;
      }
      const now = live.length > 0 || !waiting;
      if (!now && served !== false) {
        say(`fsjob: no live worker serves ${queue.root}, so the job waits until one does (start one: fsjob work -q ${queue.root}); a one-shot consumer runs it without registering\n`);
      } else if (now && served === false && live.length > 0) {
        say(`fsjob: worker ${live[0]?.workerId ?? '?'} now serves ${queue.root}\n`);
      }
      served = now;
    } catch {
      // Advice only: a queue that cannot be read is reported by the wait itself.
    } finally {
      busy = false;
    }
  };
  const schedule = (ms: number): void => {
    timer = setTimeout(() => {
      void look().finally(() => {
        if (!stopped) schedule(LOOK_EVERY_MS);
      });
    }, ms);
    timer.unref();
  };
  schedule(FIRST_LOOK_MS);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
