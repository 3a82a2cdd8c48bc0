/**
 * A job whose command runs while a case acts on it: produced by the
 * implementation, consumed by its consume role, and watched until the claim,
 * the exec record and the command's probe are all there.
 */
import path from 'node:path';
import { readRecord, type ClaimRecord, type DocumentByType, type DocumentType, type ExecRecord, type JobRequest } from '../../src/records/codec.ts';
import type { CaseContext } from '../runner/case.ts';
import { listing } from '../runner/inspect.ts';
import type { ProcessResult, Spawned } from '../runner/process.ts';
import { readProbeLog, waitFor } from './probes.ts';

const START_WAIT_MS = 30_000;
const EXIT_WAIT_MS = 60_000;

/** A valid record, or undefined when it is missing or invalid. */
export async function recordAt<T extends DocumentType>(file: string, type: T, jobId?: string): Promise<DocumentByType[T] | undefined> {
  const read = await readRecord(file, type, { allowMissing: true, ...(jobId === undefined ? {} : { expectedJobId: jobId }) }).catch(() => undefined);
  return read?.ok === true ? read.value : undefined;
}

export interface Running {
  id: string;
  jobDir: string;
  consumer: Spawned;
  claim: ClaimRecord;
  exec: ExecRecord;
  pgid: number;
}

/** Produces the request, starts consume and waits until the command runs with its claim and exec record published. */
export async function startRunning(ctx: CaseContext, queue: string, request: JobRequest, tag: string, log: string): Promise<Running | undefined> {
  const id = await ctx.produceOk(queue, request, ['ENQ-4']);
  if (id === undefined) return undefined;
  const jobDir = path.join(queue, 'jobs', id);
  const consumer = ctx.startRole('consume', { queue });
  let claim: ClaimRecord | undefined;
  let exec: ExecRecord | undefined;
  const started = await waitFor(async () => {
    if ((await readProbeLog(log)).pid(tag) === undefined) return false;
    claim ??= await recordAt(path.join(jobDir, 'claim.1.json'), 'claim', id);
    exec ??= await recordAt(path.join(jobDir, 'exec.1.json'), 'exec', id);
    return claim !== undefined && exec !== undefined;
  }, START_WAIT_MS);
  if (!started || claim === undefined || exec === undefined || exec.group === null) {
    const snapshot = await ctx.snapshot(queue);
    const claims = snapshot.jobs.get(id)?.claims ?? [];
    if (claims.length > 0 && claims[0] !== 1) {
      ctx.fail(['I2', 'CLAIM-5'], `the first claim of a fresh job is generation ${claims[0]}: generations run 1..g without gaps (claims ${claims.join(',')})`, listing(snapshot, new Set([id])));
      consumer.kill();
      return undefined;
    }
    const probes = await readProbeLog(log);
    const clauses = probes.pid(tag) !== undefined && exec === undefined ? ['EXEC-3', 'EXEC-2'] : ['MANIFEST-1'];
    ctx.fail(clauses, probes.pid(tag) !== undefined && exec === undefined ? `the command runs but no valid exec.1.json was published: no command may run unrecorded` : `the job did not start within ${START_WAIT_MS} ms with a valid claim.1.json and exec.1.json`, listing(await ctx.snapshot(queue)));
    consumer.kill();
    return undefined;
  }
  return { id, jobDir, consumer, claim, exec, pgid: exec.group.pgid };
}

/** Waits for the consumer to exit, killing it after EXIT_WAIT_MS (a failure). */
export async function consumerExit(ctx: CaseContext, consumer: Spawned, clauses: string[]): Promise<ProcessResult> {
  let timer: NodeJS.Timeout | undefined;
  const exited = await Promise.race([consumer.done.then(() => true), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), EXIT_WAIT_MS)))]);
  clearTimeout(timer);
  if (!exited) {
    consumer.kill();
    ctx.fail([...clauses, 'MANIFEST-2'], `consume did not exit within ${EXIT_WAIT_MS} ms once nothing was runnable`);
  }
  return consumer.done;
}
