/**
 * Which power-loss states to build from a model (power-model.ts), and how
 * to put one on disk. A crash point c is a power loss right after call c;
 * at c some changes are pending (not yet durable), and the model allows any
 * subset of them to survive. These families choose the subsets that can
 * break the most, after ALICE (OSDI 2014: replay the durable prefix, then
 * one operation persisted out of order, or omitted) and CrashMonkey's B3
 * (OSDI 2018: crash at the persistence points, check what an fsync that
 * returned promised):
 *
 * - `lost`: every pending change lost: only what was fsynced survives;
 * - `names`: every pending directory change and mode kept, every pending
 *   byte and size lost: names published over data that was never fsynced;
 * - `alone`: one pending publication (a link or rename to a name that is
 *   not temporary) kept, every other pending change lost: the publication
 *   survived, what it depends on did not;
 * - `omitted` (full sample only): every pending change kept except one
 *   pending publication (ALICE's ordering exploration: one operation
 *   omitted, everything after it persisted).
 */
import { linkSync, mkdirSync, symlinkSync, writeFileSync, chmodSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { buildState, listState, pendingAt, stateDigest, type Change, type Model, type Snapshot } from './power-model.ts';

export type Family = 'lost' | 'names' | 'alone' | 'omitted';

export interface PowerState {
  /** The crash point: power lost right after call c. */
  c: number;
  family: Family;
  /** alone: the publication kept; omitted: the publication left out. */
  change?: Change;
  state: Snapshot;
  digest: string;
  /** Pending changes at c, and how many of them this state drops. */
  pending: number;
  lost: number;
}

export interface Plan {
  lost: number[];
  names: number[];
  alone: number[];
  omitted: number[];
}

const FAMILY_ORDER: Family[] = ['lost', 'names', 'alone', 'omitted'];

/** A pending change that publishes a name: a link or rename to a name that does not start with '.'. */
export function publishes(change: Change): boolean {
  return (change.type === 'add' || change.type === 'move') && change.origin !== 'create' && change.origin !== undefined && !(change.name ?? '').startsWith('.');
}

function isEntry(change: Change): boolean {
  return change.type === 'add' || change.type === 'remove' || change.type === 'move';
}

/**
 * The states of a plan, each distinct state once (the first by crash point,
 * then family), in that order. Deterministic: the same trace gives the same
 * states.
 */
export function planStates(model: Model, plan: Plan): PowerState[] {
  const wanted: { c: number; family: Family; change?: Change }[] = [];
  for (const c of plan.lost) wanted.push({ c, family: 'lost' });
  for (const c of plan.names) wanted.push({ c, family: 'names' });
  for (const c of plan.alone) for (const change of pendingAt(model, c).filter(publishes)) wanted.push({ c, family: 'alone', change });
  for (const c of plan.omitted) for (const change of pendingAt(model, c).filter(publishes)) wanted.push({ c, family: 'omitted', change });
  wanted.sort((a, b) => a.c - b.c || FAMILY_ORDER.indexOf(a.family) - FAMILY_ORDER.indexOf(b.family) || (a.change?.seq ?? 0) - (b.change?.seq ?? 0));

  const seen = new Set<string>();
  const states: PowerState[] = [];
  for (const want of wanted) {
    const pending = pendingAt(model, want.c);
    const keep = keeper(want.family, want.change);
    const state = buildState(model, want.c, keep);
    const digest = stateDigest(state);
    if (seen.has(digest)) continue;
    seen.add(digest);
    states.push({ ...want, state, digest, pending: pending.length, lost: pending.filter((change) => !keep(change)).length });
  }
  return states;
}

function keeper(family: Family, chosen: Change | undefined): (change: Change) => boolean {
  switch (family) {
    case 'lost':
      return () => false;
    case 'names':
      return (change) => isEntry(change) || change.type === 'chmod';
    case 'alone':
      return (change) => change === chosen;
    case 'omitted':
      return (change) => change !== chosen;
  }
}

/** The point c of the last call before change `change` became durable (or the trace's end): where the most is pending with it. */
export function lastPendingPoint(model: Model, change: Change): number {
  return change.durableFrom === undefined ? model.last : Math.max(change.record.k, change.durableFrom - 1);
}

/** One line saying which state this is, for failures. */
export function describeState(state: PowerState, model: Model): string {
  const rel = (p: string | undefined): string => (p === undefined ? '' : path.relative(model.root, p) || '.');
  const what = (change: Change): string => `k=${change.record.k} ${change.record.op} ${rel(change.record.path)}${change.record.path2 === undefined ? '' : ` -> ${rel(change.record.path2)}`}`;
  switch (state.family) {
    case 'lost':
      return `power lost after call ${state.c}; every change not yet durable lost (${state.lost} of them)`;
    case 'names':
      return `power lost after call ${state.c}; every pending name kept, every byte not yet fsynced lost (${state.lost} changes)`;
    case 'alone':
      return `power lost after call ${state.c}; of the ${state.pending} pending changes only ${state.change === undefined ? '?' : what(state.change)} kept`;
    case 'omitted':
      return `power lost after call ${state.c}; every pending change kept except ${state.change === undefined ? '?' : what(state.change)}`;
  }
}

/**
 * Writes a state as real files under `target` (which must not exist): the
 * directories, files with their bytes, modes, symlinks, hard links where
 * two names share a file, FIFOs for anything else.
 */
export function materialize(state: Snapshot, target: string): void {
  const written = new Map<number, string>();
  const dirModes: { file: string; mode: number }[] = [];
  for (const item of listState(state)) {
    const file = item.rel === '' ? target : path.join(target, item.rel);
    const earlier = written.get(item.inode);
    if (earlier !== undefined && item.kind !== 'dir') {
      linkSync(earlier, file);
      continue;
    }
    written.set(item.inode, file);
    switch (item.kind) {
      case 'dir':
        mkdirSync(file, { mode: 0o700 });
        dirModes.push({ file, mode: item.mode });
        break;
      case 'file':
        writeFileSync(file, item.data, { mode: 0o600, flag: 'wx' });
        chmodSync(file, item.mode);
        break;
      case 'symlink':
        symlinkSync(item.target, file);
        break;
      case 'other': {
        const made = spawnSync('mkfifo', ['-m', (item.mode & 0o777).toString(8), file]);
        if (made.status !== 0) throw new Error(`cannot make a FIFO at ${file}: ${made.stderr.toString()}`);
        break;
      }
    }
  }
  // Directory modes last, so a read-only directory does not stop its own filling.
  for (const { file, mode } of dirModes.reverse()) chmodSync(file, mode);
}
