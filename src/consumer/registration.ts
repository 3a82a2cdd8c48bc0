/**
 * A worker's registration (WORKER-1): workers/<w>.json, published by rename
 * when the worker starts and at every renewal, removed on a clean exit. It
 * says who serves the queue, since when, how, and which jobs it runs; the
 * pool's ranks are read from these records (pool.ts).
 */
import { PROTOCOL_VERSION } from '../base/constants.ts';
import { publishRecord } from '../fs/safefs.ts';
import type { Queue } from '../model/queue.ts';
import { encodeRecord, type WorkerRecord } from '../records/codec.ts';
import type { Context } from './context.ts';

/** What a registration says beside the worker's identity and lease (the context's). */
export interface Registration {
  workerId: string;
  startedMs: number;
  concurrency: number;
  mode: WorkerRecord['mode'];
  jobs: { job_id: string; gen: number }[];
  handlers: string[];
}

/** Publishes workers/<w>.json by rename (PUB-4), heartbeat now. */
export async function publishRegistration(queue: Queue, ctx: Pick<Context, 'self' | 'clock' | 'leaseMs'>, registration: Registration): Promise<void> {
  const record: WorkerRecord = {
    fsjob: PROTOCOL_VERSION,
    type: 'worker',
    worker_id: registration.workerId,
    owner: ctx.self,
    started_ms: registration.startedMs,
    heartbeat_ms: ctx.clock.nowMs(),
    lease_ms: ctx.leaseMs,
    concurrency: registration.concurrency,
    mode: registration.mode,
    // The schema's bounds: at most 1024 jobs and 256 handlers are listed.
    jobs: registration.jobs.slice(0, 1024),
    handlers: registration.handlers.slice(0, 256),
  };
  const bytes = encodeRecord('worker', record, { expectedWorkerId: registration.workerId });
  await publishRecord(queue.paths.dir('workers'), `${registration.workerId}.json`, bytes, 'rename', queue.fsOptions);
}
