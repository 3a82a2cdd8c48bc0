/**
 * The job scans of a big audit in worker threads (scan-worker.ts), batch by
 * batch: the audit is bound by system calls and record checks, which
 * parallelize. Results come back in id order, exactly as the inline scan
 * (queue.ts) gives them.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { ERROR_CODES, FsjobError, type FsjobErrorCode } from '../base/errors.ts';
import type { AuditEnv } from './entries.ts';
import type { JobScan } from './job-scan.ts';
import type { ScanBatchResult, ScanWorkerInit } from './scan-worker.ts';

const WORKER_BATCH = 256;
/** Batches a worker holds at once: it starts the next while the main thread takes in the last one's results. */
const IN_FLIGHT = 2;

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

/**
 * The same scan in worker threads, batch by batch, for big queues: the
 * audit is bound by system calls and record checks, which parallelize.
 * Results are kept in id order, exactly as the inline scan gives them.
 */
export async function scanInWorkers(entry: URL, env: AuditEnv, ids: readonly string[], threads: number, progress: (checked: number) => void, batch = WORKER_BATCH): Promise<(JobScan | null)[]> {
  const init: ScanWorkerInit = { shownRoot: env.shownRoot, root: env.root, uid: env.uid, nowMs: env.nowMs };
  const results: (JobScan | null)[] = new Array<JobScan | null>(ids.length).fill(null);
  let next = 0;
  let done = 0;
  let failure: ScanBatchResult | undefined;
  const runWorker = (): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const worker = new Worker(entry, { workerData: init });
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
          for (const [offset, scan] of result.scans.entries()) results[start + offset] = scan;
          done += result.scans.length;
          progress(done);
        }
        send();
      });
      worker.once('error', reject);
      worker.once('exit', () => resolve());
      for (let i = 0; i < IN_FLIGHT; i++) send();
    });
  await Promise.all(Array.from({ length: Math.min(threads, Math.ceil(ids.length / batch)) }, runWorker));
  if (failure !== undefined && !failure.ok) {
    const { code, message, path, errno } = failure.error;
    throw new FsjobError(isErrorCode(code) ? code : 'IO', message, { ...(path === undefined ? {} : { path }), ...(errno === undefined ? {} : { errno }) });
  }
  return results;
}

function isErrorCode(code: string): code is FsjobErrorCode {
  return (ERROR_CODES as readonly string[]).includes(code);
}
