/**
 * Batches of jobs: each plan is a request, optionally a step after it is
 * produced (a cancel), and what its receipt and outputs must show. A batch is
 * produced by one implementation and consumed by another (or the same), so
 * the same plans serve the behavioural cases and the interoperability cases.
 *
 * Commands record their starts in a log OUTSIDE the queue ("start <tag>"
 * lines): a command must never write inside the queue, and the log is what
 * proves how often a job ran.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { JobRequest, ReceiptRecord } from '../../src/records/codec.ts';
import { type CaseContext, countBy, readStarts } from '../runner/case.ts';
import { checkInvariants, listing, type JobSnapshot, type QueueSnapshot } from '../runner/inspect.ts';
import type { Manifest } from '../runner/manifest.ts';
import { describeExit } from '../runner/process.ts';

export const SH = '/bin/sh';

/** argv running a sh script; inside it $1, $2, ... are `args`. */
export type Argv = [string, ...string[]];

export function sh(script: string, ...args: string[]): Argv {
  return [SH, '-c', script, 'fsjob-case', ...args];
}

/** argv that appends "start TAG" to LOG and then runs SCRIPT ($1 = tag, $2 = log, $3... = args). */
export function logged(log: string, tag: string, script = ':', ...args: string[]): Argv {
  return sh(`printf 'start %s\\n' "$1" >> "$2"; ${script}`, tag, log, ...args);
}

export interface PlanEnv {
  ctx: CaseContext;
  /** The start log (outside the queue). */
  log: string;
  /** A directory outside the queue for the batch's commands: the default cwd. */
  work: string;
  queue: string;
}

export interface JobView {
  tag: string;
  id: string;
  queue: string;
  /** The batch's start log (outside the queue), which probes also write to. */
  log: string;
  job: JobSnapshot | undefined;
  receipt: ReceiptRecord | undefined;
  snapshot: QueueSnapshot;
  /** Times this job's command started. */
  starts: number;
  /** Every start in the batch, in order. */
  order: string[];
  /** Every line of the batch's log, in order (commands may log more than starts). */
  lines: string[];
  /** The kept bytes of stdout.<g> / stderr.<g> of the receipt's generation. */
  output: (stream: 'stdout' | 'stderr') => Promise<Buffer | undefined>;
  evidence: () => string[];
}

export interface JobPlan {
  tag: string;
  /** Cited when an expectation of this plan fails. */
  clauses: string[];
  /** Needs these optional roles of the side that produces (cancel...). */
  roles?: ('cancel' | 'cancel_force')[];
  request: (env: PlanEnv) => JobRequest;
  /** Runs once the job is produced (cancel it, ...). */
  after?: (env: PlanEnv, id: string, producer: Manifest) => Promise<void>;
  /** `after` damages the job's stdin on purpose (EXEC-7): I1's stdin check skips it. */
  damagesStdin?: boolean;
  expect: (view: JobView, ctx: CaseContext) => Promise<void> | void;
}

export interface BatchOptions {
  producer?: Manifest;
  consumer?: Manifest;
  /** Clauses cited when consume fails. */
  clauses: string[];
  /** Consumer processes run at once (default 1). */
  consumers?: number;
  timeoutMs?: number;
}

/** Produces every plan in order with `producer`, consumes with `consumer`, then checks each plan and I1..I4. */
export async function runBatch(ctx: CaseContext, label: string, plans: readonly JobPlan[], options: BatchOptions): Promise<void> {
  const producer = options.producer ?? ctx.impl;
  const consumer = options.consumer ?? ctx.impl;
  const usable = plans.filter((plan) => (plan.roles ?? []).every((role) => producer.roles[role] !== undefined));
  const skipped = plans.length - usable.length;
  if (skipped > 0) ctx.note(`${skipped} plan(s) need a cancel role ${producer.name} lacks`);
  if (usable.length === 0) ctx.skip('no plan applies');
  const queue = await ctx.newQueue(label);
  const work = await ctx.subdir(`${label}/work`);
  const env: PlanEnv = { ctx, log: path.join(work, 'starts.log'), work, queue };
  const ids = new Map<string, string>();
  for (const plan of usable) {
    const id = await ctx.produceOk(queue, plan.request(env), plan.clauses, { via: producer, name: `${label}-${plan.tag}` });
    if (id === undefined) continue;
    ids.set(plan.tag, id);
    if (plan.after !== undefined) await plan.after(env, id, producer);
  }
  const count = options.consumers ?? 1;
  const runs = await Promise.all(
    Array.from({ length: count }, () => ctx.role('consume', { queue }, { via: consumer, ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }) })),
  );
  const snapshot = await ctx.snapshot(queue);
  for (const result of runs) {
    if (result.code !== 0 || result.timedOut) {
      ctx.fail([...options.clauses, result.timedOut ? 'MANIFEST-2' : 'MANIFEST-1'], `${consumer.name}: consume ${result.timedOut ? 'did not finish within its time limit' : 'failed'} (it must process the runnable jobs and exit 0)`, [describeExit(result), ...listing(snapshot)]);
    }
  }
  const order = await readStarts(env.log);
  const lines = (await readFile(env.log, 'utf8').catch(() => '')).split('\n').filter((line) => line !== '');
  const counts = countBy(order);
  for (const plan of usable) {
    const id = ids.get(plan.tag);
    if (id === undefined) continue;
    const job = snapshot.jobs.get(id);
    const view: JobView = {
      tag: plan.tag,
      id,
      queue,
      log: env.log,
      job,
      receipt: job?.receipt,
      snapshot,
      starts: counts.get(plan.tag) ?? 0,
      order,
      lines,
      output: async (stream) => {
        const summary = job?.receipt?.[stream];
        if (job === undefined || summary === null || summary === undefined) return undefined;
        return readFile(path.join(job.dir, `${stream}.${summary.gen}`)).catch(() => undefined);
      },
      evidence: () => [`plan ${plan.tag}: job ${id}`, ...(job?.receipt === undefined ? [] : [`receipt: ${JSON.stringify(job.receipt).slice(0, 600)}`]), ...listing(snapshot, new Set([id]))],
    };
    if (job === undefined) {
      ctx.fail(['I1', ...plan.clauses], `plan ${plan.tag}: job ${id} was accepted but is not in jobs/`, listing(snapshot));
      continue;
    }
    await plan.expect(view, ctx);
  }
  const damagedStdin = new Set(usable.filter((plan) => plan.damagesStdin === true).flatMap((plan) => ids.get(plan.tag) ?? []));
  for (const failure of await checkInvariants(snapshot, { accepted: [...ids.values()], starts: new Map([...ids].map(([tag, id]) => [id, counts.get(tag) ?? 0])), damagedStdin })) {
    ctx.failures.push(failure);
  }
}

export interface ReceiptWant {
  outcome?: ReceiptRecord['outcome'];
  exit_code?: number;
  reason?: ReceiptRecord['reason'];
  attempts?: number;
  status?: ReceiptRecord['status'];
  /** Starts the command must have made. */
  starts?: number;
  /** No execution was recorded: the receipt's stdout and stderr are null (RCPT-5). */
  noOutputs?: boolean;
}

/** The clause that fixes a receipt field (spec/records.md). */
const FIELD_CLAUSE: Record<string, string | undefined> = { exit_code: 'EXEC-10', reason: 'RCPT-4', attempts: 'RETRY-1' };

/** Checks the receipt's fields against `want`; one failure listing every mismatch. Returns the receipt when present. */
export function expectReceipt(view: JobView, ctx: CaseContext, clauses: string[], want: ReceiptWant): ReceiptRecord | undefined {
  const receipt = view.receipt;
  if (receipt === undefined) {
    const why = view.job?.receiptFindings[0];
    ctx.fail(['I3', ...clauses], `plan ${view.tag}: no valid receipt after consume${why === undefined ? '' : ` (${why.code}: ${why.message})`}`, view.evidence());
    return undefined;
  }
  const wrong: string[] = [];
  const keys: string[] = [];
  for (const key of ['outcome', 'exit_code', 'reason', 'attempts', 'status'] as const) {
    if (want[key] === undefined) continue;
    if (!isDeepStrictEqual(receipt[key], want[key])) {
      wrong.push(`${key} is ${JSON.stringify(receipt[key])}, expected ${JSON.stringify(want[key])}`);
      keys.push(key);
    }
  }
  if (want.starts !== undefined && view.starts !== want.starts) {
    wrong.push(`the command started ${view.starts} times, expected ${want.starts}`);
    keys.push('starts');
  }
  // With the right outcome, a wrong field is that field's clause first.
  const field = keys.length === 1 ? FIELD_CLAUSE[keys[0] as string] : undefined;
  const named = field === undefined ? clauses : [field, ...clauses.filter((c) => c !== field)];
  if (wrong.length > 0) ctx.fail(named, `plan ${view.tag}: ${wrong.join('; ')}`, view.evidence());
  else if (want.noOutputs === true && (receipt.stdout !== null || receipt.stderr !== null)) ctx.fail(['RCPT-5', ...clauses], `plan ${view.tag}: no execution was recorded, so the receipt's stdout and stderr must be null; got ${JSON.stringify(receipt.stdout)}, ${JSON.stringify(receipt.stderr)}`, view.evidence());
  return receipt;
}

/** Checks that a stream's kept bytes are exactly `bytes`. */
export async function expectOutput(view: JobView, ctx: CaseContext, clauses: string[], stream: 'stdout' | 'stderr', bytes: Buffer | string): Promise<void> {
  const want = typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : bytes;
  const got = await view.output(stream);
  if (got === undefined) {
    ctx.fail(clauses, `plan ${view.tag}: the receipt describes no ${stream} file`, view.evidence());
    return;
  }
  if (!got.equals(want)) {
    const show = (b: Buffer): string => JSON.stringify(b.subarray(0, 120).toString('latin1'));
    ctx.fail(clauses, `plan ${view.tag}: ${stream} holds ${got.length} bytes ${show(got)}, expected ${want.length} bytes ${show(want)}`, view.evidence());
  }
}
