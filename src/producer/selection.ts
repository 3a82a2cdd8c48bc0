/**
 * Which jobs an operator means by a lane or a label (`fsjob wait --all`,
 * `--lane L`, `--label K=V`; `fsjob status --label K=V`): a selection is
 * matched against the job's spec, the one record that never changes, so a
 * job matches or not for its whole life.
 */
import path from 'node:path';
import { isFsjobError } from '../base/errors.ts';
import { listDir, statEntry } from '../fs/safefs.ts';
import { isJobId } from '../model/layout.ts';
import { assertQueue, type Queue } from '../model/queue.ts';
import { readRecord, type SpecRecord } from '../records/codec.ts';
import { GATED_SUFFIX } from '../records/names.ts';

/** Which jobs: every field given must match (an empty selection is every job). */
export interface JobSelection {
  /** Only jobs of this lane (the spec's `lane`). */
  lane?: string;
  /** Only jobs whose spec has each of these labels with exactly this value. */
  labels?: Readonly<Record<string, string>>;
}

/** Whether the selection asks anything of the spec. */
export function selects(selection: JobSelection): boolean {
  return selection.lane !== undefined || Object.keys(selection.labels ?? {}).length > 0;
}

/** Whether a job with this spec (or its lane and labels) is selected; a job whose spec cannot be read matches only the empty selection (its lane and labels are unknown). */
export function matchesSelection(spec: Pick<SpecRecord, 'lane' | 'labels'> | undefined, selection: JobSelection): boolean {
  if (!selects(selection)) return true;
  if (spec === undefined) return false;
  if (selection.lane !== undefined && spec.lane !== selection.lane) return false;
  for (const [name, value] of Object.entries(selection.labels ?? {})) {
    if (spec.labels[name] !== value) return false;
  }
  return true;
}

async function finished(queue: Queue, id: string): Promise<boolean> {
  try {
    return (await statEntry(queue.paths.jobFile(id, 'receipt.json'), queue.fsOptions)) !== undefined;
  } catch {
    return false; // unreadable: the wait reads the job and says what is wrong with it
  }
}

async function specOf(queue: Queue, id: string, gated: boolean): Promise<SpecRecord | undefined> {
  try {
    const options = { ...queue.fsOptions, expectedJobId: id, allowMissing: true };
    // GATE-4: a gated job's spec is in jobs/<id>.gated/ until its gate opens; opened meanwhile, it is at jobs/<id>/.
    const read = (gated ? await readRecord(path.join(queue.paths.gatedJob(id), 'spec.json'), 'spec', options) : undefined) ?? (await readRecord(queue.paths.jobFile(id, 'spec.json'), 'spec', options));
    return read?.ok === true ? read.value : undefined;
  } catch (error) {
    if (isFsjobError(error)) return undefined; // refused or gone: not selectable by lane or label
    throw error;
  }
}

/**
 * The jobs without a receipt now (RCPT-3) that the selection matches, in
 * enqueue order (ascending id, LAYOUT-4). This is what `fsjob wait --all`
 * waits for: the jobs unfinished when the wait starts, never one enqueued
 * later (a wait that grew with the queue might never end) nor one finished
 * before (yesterday's failure is not this wait's answer). Costs a listing of
 * jobs/ and one lstat per job; a lane or label also reads the spec of each
 * unfinished job.
 */
export async function unfinishedJobs(queue: Queue, selection: JobSelection = {}): Promise<string[]> {
  assertQueue(queue, 'unfinishedJobs');
  // Held and blocked jobs (jobs/<id>.gated, GATE-1) are unfinished too: a wait on a build and the tests
  // enqueued --after it waits for both. Seen at both names (its gate opened while listing), a job is open.
  const gated = new Map<string, boolean>();
  for (const entry of await listDir(queue.paths.dir('jobs'), queue.fsOptions)) {
    if (entry.kind !== 'dir') continue;
    const name: string = entry.name;
    const id = name.endsWith(GATED_SUFFIX) ? name.slice(0, -GATED_SUFFIX.length) : name;
    if (!isJobId(id)) continue;
    gated.set(id, id !== name && gated.get(id) !== false);
  }
  const ids = [...gated.keys()].sort();
  const picked: string[] = [];
  for (const id of ids) {
    const isGated = gated.get(id) === true;
    if (!isGated && (await finished(queue, id))) continue;
    if (selects(selection) && !matchesSelection(await specOf(queue, id, isGated), selection)) continue;
    picked.push(id);
  }
  return picked;
}
