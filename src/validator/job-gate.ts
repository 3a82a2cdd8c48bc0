/**
 * What one job directory says about its gates (spec/gates.md), for the job
 * scan (job-scan.ts): the entries a gated directory may not hold (GATE-2),
 * the dependencies a spec may not name (AFTER-2), and the summary the
 * queue-wide check needs (gates.ts).
 */
import type { DirEntry } from '../fs/safefs.ts';
import { classifyJobEntry } from '../model/layout.ts';
import type { Dependency, SpecRecord } from '../records/codec.ts';
import type { Sink } from './entries.ts';

/** The gates of an unfinished job: its dependencies, hold, release and cancel entries. */
export interface GateSummary {
  after: readonly Dependency[];
  hold: boolean;
  release: boolean;
  cancel: boolean;
}

const CLAIMED_KINDS = new Set(['claim', 'exec', 'state', 'end', 'stdout', 'stderr', 'receipt']);

/** GATE-2: nothing claims a gated job, so its directory holds no generation, output or receipt. */
export function checkGatedEntries(sink: Sink, id: string, entries: readonly DirEntry[], shown: (name: string) => string): void {
  for (const entry of entries) {
    if (!CLAIMED_KINDS.has(classifyJobEntry(entry.name).kind)) continue;
    sink.add('GATED_RECORD', `${shown(entry.name)} is in a gated job's directory, where nothing is ever claimed`, shown(entry.name), id);
  }
}

/** AFTER-2: a job names each dependency once, never itself; GATE-1: a gated job has a gate. */
export function checkGateSpec(sink: Sink, id: string, spec: SpecRecord, gated: boolean, shownDir: string): void {
  const shown = `${shownDir}/spec.json`;
  const seen = new Set<string>();
  for (const dependency of spec.after ?? []) {
    if (dependency.job_id === id) sink.add('AFTER_INVALID', 'spec.json names the job itself in after', shown, id, '/after');
    else if (seen.has(dependency.job_id)) sink.add('AFTER_INVALID', `spec.json names job ${dependency.job_id} twice in after`, shown, id, '/after');
    seen.add(dependency.job_id);
  }
  if (gated && spec.after === undefined && spec.hold !== true) sink.add('GATED_NO_GATE', `${shownDir} is gated but its spec has neither after nor hold`, shownDir, id);
}

/** The summary of a spec's gates, or undefined when it has none. */
export function gateOf(spec: SpecRecord, release: boolean, cancel: boolean): GateSummary | undefined {
  if (spec.after === undefined && spec.hold !== true) return undefined;
  return { after: spec.after ?? [], hold: spec.hold === true, release, cancel };
}
