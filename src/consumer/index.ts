/**
 * The consumer of fsjob (conformance level CONF-2, spec/README.md; each step: spec/roles/consumer.md): claim
 * jobs exclusively, run them, publish exactly one receipt each, recover
 * orphans.
 *
 * - A job is claimed by link()ing `claim.<g+1>.json` (CLAIM-5): the link is
 *   the commit point, so each generation has exactly one owner. A claim is
 *   taken over an open one only when its owner is judged dead AND its
 *   execution is proven stopped (CLAIM-3, RECOV-1); what cannot be proven is
 *   left alone and reported (UNPROVEN).
 * - No command runs unrecorded: its process group waits on a pipe until
 *   `exec.<g>.json` is linked (EXEC-2, EXEC-3), and a guardian stops the
 *   recorded groups within GUARDIAN_LIMIT if this process dies (WORKER-2).
 *   The exec record is the commit point of an attempt (RETRY-1), so
 *   `max_attempts` 1 means started at most once (RETRY-2).
 * - Before every write the owner checks it still owns the job (CLAIM-7); a
 *   superseded owner kills its group and publishes nothing (OWN-1). The
 *   receipt is linked only after the group is proven stopped and the outputs
 *   are fsynced (RCPT-1..3), so at most one receipt exists and it describes
 *   complete files.
 *
 * Assumptions: queues are local filesystems with POSIX link()/rename(); the
 * process table (/proc) of this host is readable (else owners are `unknown`
 * and never broken, ID-6); hosts sharing a queue keep their clocks within
 * LEASE_SKEW (LEASE-3).
 *
 * Costs: a claim is one link (with its temp file, two fsyncs); an attempt
 * adds two output files, the exec record and the receipt (or an end record),
 * each a link plus fsyncs; the lease costs one rename every lease/3.
 */
/*
 * Use:
 *
 *   const worker = new Worker({ queues: ['/srv/q'], concurrency: 2, mode: 'drain' });
 *   worker.handle('resize', async ({ payload, signal, heartbeat }) => resize(payload, signal));
 *   const summary = await worker.run();          // worker.stop() from a signal handler: WORKER-3
 *
 *   const job = await claimNext('/srv/q', { handlers: ['resize'] });   // or run payload jobs yourself
 *   if (job !== null) await job.complete({ result: await resize(job.payload, job.signal) });
 *
 *   const report = await recover('/srv/q');      // RECOV-1, READY-4, TEMP-1, WORKER-1, GC-2
 */
// Many records are checked here: with ajv's compiled code (src/records/compiled.ts).
import '../records/compiled.ts';
export { Worker, type WorkerOptions, type WorkerMode, type WorkerSummary } from './worker.ts';
export { recover, type RecoverOptions, type RecoverReport } from './recover.ts';
export { claimNext, type ClaimNextOptions } from './claim-next.ts';
export { ClaimedJob, type Handler, type HandlerContext } from './payload.ts';
export { type RunOutcome } from './run.ts';
export type { ConsumerOptions, ConsumerEvent } from './context.ts';
export { FsjobError, isFsjobError, ERROR_CODES, type FsjobErrorCode, type FsjobErrorFields } from '../base/errors.ts';
/** Every record type (spec/records.md) and the request form (spec/spec-record.md), as the schemas define them. */
export type * from '../records/generated/types.ts';
export type { ReceiptOutcome, ReceiptReason } from '../records/codec.ts';
export { AllowList, globToRegExp } from './allow.ts';
export { Guardian } from './guardian.ts';
export { Spawner } from './spawner.ts';
