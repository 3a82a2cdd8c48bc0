/**
 * A worker thread of a large audit: scans the job directories it is handed
 * (src/validator/job-scan.ts) and posts the results back. Started through
 * scan-worker-entry.mjs, which registers the TypeScript loader first.
 *
 * Protocol: workerData is a ScanWorkerInit; each message is a batch of job
 * ids, answered by one ScanBatchResult; the message null ends the worker.
 */
// Many records are checked here: with ajv's compiled code (src/records/compiled.ts).
import '../records/compiled.ts';
import { parentPort, workerData } from 'node:worker_threads';
import { isFsjobError } from '../base/errors.ts';
import { type AuditEnv, auditEnv } from './entries.ts';
import { scanJob } from './job-scan.ts';
import { type PostedScan, compactScan } from './posted-scan.ts';

export interface ScanWorkerInit {
  shownRoot: string;
  root: string;
  uid: number;
  nowMs: number;
}

export type ScanBatchResult =
  | { ok: true; scans: PostedScan[] }
  | { ok: false; error: { code: string; message: string; path?: string | undefined; errno?: string | undefined } };

const init = workerData as ScanWorkerInit;
const env: AuditEnv = auditEnv(init.shownRoot, init.root, init.uid, init.nowMs);
const port = parentPort;

port?.on('message', (ids: string[] | null) => {
  if (ids === null) {
    port.close();
    return;
  }
  let result: ScanBatchResult;
  try {
    result = { ok: true, scans: ids.map((id) => compactScan(scanJob(env, id))) };
  } catch (error) {
    result = isFsjobError(error)
      ? { ok: false, error: { code: error.code, message: error.message, path: error.path, errno: error.errno } }
      : { ok: false, error: { code: 'IO', message: error instanceof Error ? error.message : String(error) } };
  }
  port.postMessage(result);
});
