/**
 * The job scans of a big audit shared between the main thread and worker
 * threads (scan-worker.ts), batch by batch: the audit is bound by system
 * calls and record checks, which parallelize. The main thread scans too, in
 * small batches between the workers' answers, so that on 2 cores one worker
 * and the main thread keep both busy without a second worker's start-up, and
 * the jobs it scans are never copied between threads. The workers start
 * before jobs/ is listed and load while it is. Results are handed on in id
 * order, exactly as the inline scan (queue.ts) gives them.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { ERROR_CODES, FsjobError, type FsjobErrorCode } from '../base/errors.ts';
import type { AuditEnv } from './entries.ts';
import type { JobScan } from './job-scan.ts';
import type { ScanBatchResult, ScanWorkerInit } from './scan-worker.ts';
import { expandScan } from './posted-scan.ts';
import { jobIdOfDirName } from '../records/names.ts';

const WORKER_BATCH = 256;
/** Batches a worker holds at once: it starts the next while the main thread takes in the last one's results. */
const IN_FLIGHT = 2;
/** Jobs the main thread scans between two looks at the workers' answers: a few milliseconds of work. */
const MAIN_BATCH = 32;

/**
 * The module a scan worker thread starts from, or undefined when there is
 * none: then the caller scans in its own thread. From dist/ it is the
 * compiled scan-worker.js beside this module; from the sources it is
 * scan-worker-entry.mjs, which registers the TypeScript loader first (a
 * worker does not inherit it). A bundle of the library (esbuild, webpack)
 * has neither beside it.
 */
export function scanWorkerEntry(): URL | undefined {
  // A CommonJS bundle has no import.meta.url.
  if (typeof import.meta.url !== 'string') return undefined;
  const entry = new URL(import.meta.url.endsWith('.ts') ? './scan-worker-entry.mjs' : './scan-worker.js', import.meta.url);
  return entry.protocol === 'file:' && existsSync(fileURLToPath(entry)) ? entry : undefined;
}

/** How a shared scan runs. */
export interface SharedScan {
  /** The main thread's own scan of one job; undefined: the main thread leaves every job to the workers (tests). */
  local: ((name: string) => JobScan | undefined) | undefined;
  /** Takes each job's result, in id order (null: it vanished since the listing). */
  take: (index: number, scan: JobScan | null) => void;
  progress: (checked: number) => void;
  /** Jobs per batch a worker is handed. */
  batch?: number | undefined;
}

/**
 * Worker threads for one audit's job scans, started before the jobs are
 * listed (a worker takes about as long to load as jobs/ of 100,000 takes to
 * list, so neither waits for the other), fed by scan(), or ended by close()
 * when the listing shows too few jobs to share.
 */
export class ScanPool {
  private readonly workers: Worker[];
  /** The first error a worker raised before scan() listened for it. */
  private early: unknown;
  private used = false;

  constructor(entry: URL, env: AuditEnv, count: number) {
    const init: ScanWorkerInit = { shownRoot: env.shownRoot, root: env.root, uid: env.uid, nowMs: env.nowMs };
    this.workers = Array.from({ length: count }, () => new Worker(entry, { workerData: init }));
    for (const worker of this.workers) worker.once('error', (error) => (this.early ??= error));
  }

  /** Ends the workers unless scan() took them (then they end when the scan is done). */
  async close(): Promise<void> {
    if (!this.used) await Promise.allSettled(this.workers.map((worker) => worker.terminate()));
  }

  /**
   * Scans the job directories `ids` in the main thread and the workers,
   * each taking the next batch when it is done with one, and hands every
   * result to `take` in id order as soon as the results before it are in.
   */
  async scan(ids: readonly string[], plan: SharedScan): Promise<void> {
    this.used = true;
    const batch = plan.batch ?? WORKER_BATCH;
    const results: (JobScan | null | undefined)[] = new Array<JobScan | null | undefined>(ids.length);
    let next = 0;
    let done = 0;
    let taken = 0;
    let failure: ScanBatchResult | undefined;
    const handOn = (): void => {
      while (taken < ids.length && results[taken] !== undefined) {
        plan.take(taken, results[taken] as JobScan | null);
        results[taken] = null; // handed on: its memory is the taker's now
        taken += 1;
      }
      plan.progress(done);
    };
    const feed = (worker: Worker): Promise<void> =>
      new Promise<void>((resolve, reject) => {
        // Where each batch sent and not yet answered starts: a worker answers its batches in order.
        const starts: number[] = [];
        let ended = false;
        const send = (): void => {
          if (ended) return;
          if (next >= ids.length || failure !== undefined) {
            if (starts.length === 0) {
              ended = true;
              worker.postMessage(null);
            }
            return;
          }
          starts.push(next);
          const start = next;
          next = Math.min(ids.length, next + batch);
          worker.postMessage(ids.slice(start, next));
        };
        worker.on('message', (result: ScanBatchResult) => {
          const start = starts.shift() as number;
          if (!result.ok) failure = result;
          else {
            const { scans } = result;
            for (let offset = 0; offset < scans.length; offset++) {
              const name = ids[start + offset] as string;
              results[start + offset] = expandScan(scans[offset] ?? null, jobIdOfDirName(name) ?? name);
            }
            done += scans.length;
            handOn();
          }
          send();
        });
        if (this.early !== undefined) reject(this.early);
        worker.once('error', reject);
        worker.once('exit', () => resolve());
        for (let i = 0; i < IN_FLIGHT; i++) send();
      });
    const fed = this.workers.map(feed);
    const local = plan.local;
    try {
      if (local !== undefined) {
        while (next < ids.length && failure === undefined) {
          const start = next;
          next = Math.min(ids.length, next + MAIN_BATCH);
          for (let index = start; index < next; index++) results[index] = local(ids[index] as string) ?? null;
          done += next - start;
          handOn();
          // Let the workers' answers in (and hand them their next batch) before the next few jobs.
          await new Promise<void>((resolve) => setImmediate(resolve));
        }
      }
      await Promise.all(fed);
    } catch (error) {
      await Promise.allSettled(this.workers.map((worker) => worker.terminate()));
      throw error;
    }
    if (failure !== undefined && !failure.ok) {
      const { code, message, path, errno } = failure.error;
      throw new FsjobError(isErrorCode(code) ? code : 'IO', message, { ...(path === undefined ? {} : { path }), ...(errno === undefined ? {} : { errno }) });
    }
  }
}

function isErrorCode(code: string): code is FsjobErrorCode {
  return (ERROR_CODES as readonly string[]).includes(code);
}
