/**
 * Gated jobs (spec/gates.md): a job with dependencies (`after`) or a hold is
 * published at jobs/<id>.gated, where no 1.1 reader looks, and moves to
 * jobs/<id> when its gate opens (GATE-1, GATE-3).
 *
 * - GATE-4: a job is looked for at jobs/<id>, jobs/<id>.gated, jobs/<id>
 *   again: a gate only ever opens, and may open between the first two looks.
 * - AFTER-1: a dependency is satisfied by a receipt (`finished`) or a valid
 *   `succeeded` receipt (`succeeded`); one that exists under neither name was
 *   retired after it finished, so it satisfies `finished` only.
 * - GATE-3: the gate opens by one rename within jobs/ (the commit point),
 *   the ready entry made first, jobs/ fsynced after; only with a cancel entry,
 *   or with a valid spec of a known minor whose dependencies are satisfied and
 *   which is released (HOLD-1: release.json exists).
 *
 * Nothing here claims: a gated job is never claimed (GATE-2). What to do with
 * a verdict (open, cancel first, pass over) is the caller's: a consumer
 * (consumer/gates.ts), a releaser (producer/release.ts), a canceller.
 */
import { PROTOCOL_MINOR } from '../base/constants.ts';
import { isFsjobError } from '../base/errors.ts';
import { moveNoReplace } from '../fs/safefs.ts';
import { readRecordIn, type Dependency, type SpecRecord } from '../records/codec.ts';
import { gatedJobDir, jobDir, locateJob, type Queue } from './queue.ts';
import { createReadyEntry } from './ready.ts';

/** What one dependency says now (AFTER-1). */
export type DependencyState = { kind: 'satisfied' } | { kind: 'pending' } | { kind: 'never'; what: string };

/** The dependencies of a spec (absent: none, SPEC-2). */
export function dependenciesOf(spec: Pick<SpecRecord, 'after'>): readonly Dependency[] {
  return spec.after ?? [];
}

/** AFTER-1 for one dependency. */
export async function dependencyState(queue: Queue, dependency: Dependency): Promise<DependencyState> {
  const id = dependency.job_id;
  const place = await locateJob(queue, id);
  if (place === 'gated') return { kind: 'pending' };
  if (place === 'missing') {
    // Retired after it finished (only GC-1 removes a job, AFTER-2 saw it exist): its outcome is gone.
    return dependency.when === 'finished' ? { kind: 'satisfied' } : { kind: 'never', what: 'no longer exists, so its outcome is unknown' };
  }
  const dir = jobDir(queue, id);
  if (!(await dir.present('receipt.json'))) return { kind: 'pending' };
  // REC-9: the entry finishes the job whatever it holds.
  if (dependency.when === 'finished') return { kind: 'satisfied' };
  const receipt = await readRecordIn(dir, 'receipt.json', 'receipt', { expectedJobId: id, allowMissing: true }).catch(() => undefined);
  if (receipt === undefined || !receipt.ok) return { kind: 'never', what: 'finished, but its receipt is invalid, so it did not provably succeed (SEC-10)' };
  if (receipt.value.outcome === 'succeeded') return { kind: 'satisfied' };
  return { kind: 'never', what: `finished ${receipt.value.outcome} (exit code ${receipt.value.exit_code})` };
}

/**
 * AFTER-3 seen from the producer: one sentence per dependency of `spec` that
 * can never be satisfied now (a `succeeded` on a job that finished otherwise
 * or was retired), for a warning. A job published with one is cancelled by
 * the first consumer that looks at it, never run.
 */
export async function unsatisfiable(queue: Queue, spec: Pick<SpecRecord, 'after'>): Promise<string[]> {
  const found: string[] = [];
  for (const dependency of dependenciesOf(spec)) {
    const state = await dependencyState(queue, dependency);
    if (state.kind === 'never') {
      found.push(`dependency ${dependency.job_id} ${state.what}; this job runs only after it ${dependency.when}, so a worker cancels it (exit 130) instead of running it`);
    }
  }
  return found;
}

/** What the gate of a gated job says now: the order is GATE-3's, then AFTER-3's, then HOLD-1's. */
export type GateVerdict =
  /** GATE-3 allows the gate to open: a cancel entry, or satisfied and released. */
  | { kind: 'open' }
  /** AFTER-3: it can never run; a cancel record goes in first (`reason`), then the gate opens. */
  | { kind: 'cancel'; reason: string }
  /** HOLD-1: not released. */
  | { kind: 'held' }
  /** A dependency is pending: `awaiting` is the first pending one. */
  | { kind: 'blocked'; awaiting: string }
  /** The spec is of a newer minor: it may carry gates this reader cannot see (GATE-3); left for a newer consumer. */
  | { kind: 'newer' };

/** The few facts of a gated directory a verdict rests on (from one listing). */
export interface GateFacts {
  /** A cancel.json or cancel-force.json entry exists. */
  cancel: boolean;
  /** A release.json entry exists (HOLD-1). */
  release: boolean;
}

/** The minor of a record version string ("1.2" gives 2). */
function minorOf(version: string): number {
  return Number(version.slice(version.indexOf('.') + 1));
}

/**
 * GATE-3, AFTER-3, HOLD-1: the verdict on a gated job. `spec` is undefined
 * when spec.json is not a valid record: the job is cancelled first (a 1.1
 * reader might take the spec as valid and run it), then rejected by whoever
 * claims it (CLAIM-6 step 1).
 */
export async function gateVerdict(queue: Queue, spec: SpecRecord | undefined, facts: GateFacts): Promise<GateVerdict> {
  if (facts.cancel) return { kind: 'open' };
  if (spec === undefined) return { kind: 'cancel', reason: 'its spec.json is not a valid record, so its gate cannot be judged (AFTER-3)' };
  if (minorOf(spec.fsjob) > PROTOCOL_MINOR) return { kind: 'newer' };
  let awaiting: string | undefined;
  for (const dependency of dependenciesOf(spec)) {
    const state = await dependencyState(queue, dependency);
    if (state.kind === 'never') {
      return { kind: 'cancel', reason: `dependency ${dependency.job_id} ${state.what}; this job runs only after it ${dependency.when} (AFTER-3)` };
    }
    if (state.kind === 'pending') awaiting ??= dependency.job_id;
  }
  if (spec.hold === true && !facts.release) return { kind: 'held' };
  return awaiting === undefined ? { kind: 'open' } : { kind: 'blocked', awaiting };
}

/** Jobs followed by `heldUpstream` before it gives up: a chain deeper than this is not looked through. */
const UPSTREAM_MAX = 256;

/**
 * The held job (HOLD-1: not released, not cancelled) that the gated job `id`
 * waits for through its pending dependencies, directly or further up, or
 * undefined when none is: such a job runs only once someone releases (or
 * cancels) that one, and no worker will, so a wait on it would go on in
 * silence. Each job is looked at once (AFTER-2 makes the graph acyclic; the
 * bound guards against a damaged one); an unreadable spec is passed over.
 */
export async function heldUpstream(queue: Queue, id: string): Promise<string | undefined> {
  const seen = new Set<string>([id]);
  const next = [id];
  while (next.length > 0 && seen.size <= UPSTREAM_MAX) {
    const current = next.shift() as string;
    if ((await locateJob(queue, current)) !== 'gated') continue;
    const read = await readRecordIn(gatedJobDir(queue, current), 'spec.json', 'spec', { expectedJobId: current, allowMissing: true }).catch(() => undefined);
    if (read === undefined || !read.ok) continue;
    if (current !== id && read.value.hold === true) {
      const facts = await gateFacts(queue, current);
      if (!facts.release && !facts.cancel) return current;
    }
    for (const dependency of dependenciesOf(read.value)) {
      if (seen.has(dependency.job_id)) continue;
      seen.add(dependency.job_id);
      if ((await dependencyState(queue, dependency)).kind === 'pending') next.push(dependency.job_id);
    }
  }
  return undefined;
}

/** The facts of a gated directory, looked at now (two lstats, any entry counts: REC-9). */
export async function gateFacts(queue: Queue, id: string): Promise<GateFacts> {
  const dir = gatedJobDir(queue, id);
  const [cancel, force, release] = await Promise.all([dir.present('cancel.json'), dir.present('cancel-force.json'), dir.present('release.json')]);
  return { cancel: cancel || force, release };
}

/**
 * GATE-3: open the gate of a job the caller judged openable. The ready entry
 * first (READY-1: a 1.1 consumer may have removed it, READY-3), then the
 * rename (the commit point: moveNoReplace refuses an existing jobs/<id>),
 * then the fsync of jobs/ that makes the opening durable before anything
 * depends on it (DUR-4). Resolves to 'opened', or to 'already' when another
 * process opened it first (jobs/<id>.gated is gone and jobs/<id> is there).
 */
export async function openGate(queue: Queue, id: string, priority: number): Promise<'opened' | 'already'> {
  try {
    await createReadyEntry(queue, priority, id);
  } catch (error) {
    if (!isFsjobError(error, 'EXISTS')) throw error;
  }
  let outcome: 'opened' | 'already' = 'opened';
  try {
    await moveNoReplace(queue.paths.gatedJob(id), queue.paths.job(id), queue.fsOptions);
  } catch (error) {
    // The rename of another opener came first: the job is open either way.
    if (!isFsjobError(error, 'NOT_FOUND') || (await locateJob(queue, id)) !== 'open') throw error;
    outcome = 'already';
  }
  // DUR-4: also after another's rename, which may not be durable yet.
  await queue.dirs.jobs.fsync();
  return outcome;
}
