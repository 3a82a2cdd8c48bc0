/**
 * Names and paths of a queue (spec/layout.md). Every path fsjob touches is
 * built here from the root and a name that matched its pattern first
 * (SEC-7): nothing read from a record or a directory listing is joined into a
 * path unchecked.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import { FsjobError } from '../base/errors.ts';
import { GATED_SUFFIX, JOB_ID_PATTERN, WORKER_ID_PATTERN, parseGeneration } from '../records/names.ts';

const READY_ENTRY = /^[0-9]{4}-[0-9]{19}-[0-9a-f]{16}$/;

export const QUEUE_DIRS = ['tmp', 'jobs', 'ready', 'dedupe', 'lanes', 'workers'] as const;
export type QueueDir = (typeof QUEUE_DIRS)[number];
export const QUEUE_RECORD = 'fsjob.json';
/** (1.1) The root entry that pauses the queue while it exists (PAUSE-1). */
export const PAUSE_RECORD = 'pause.json';

export function isJobId(value: unknown): value is string {
  return typeof value === 'string' && JOB_ID_PATTERN.test(value);
}

/**
 * TEMP-2: the job a tmp/ entry is named after (a staging directory tmp/<id>,
 * a retired job tmp/.gc-<id>-<random>), or undefined. While jobs/<id> exists
 * such an entry may be that job's own directory under its old name after a
 * power loss (DUR-3), so it is never removed.
 */
export function tmpEntryJobId(name: string): string | undefined {
  if (JOB_ID_PATTERN.test(name)) return name;
  if (!name.startsWith('.gc-')) return undefined;
  const rest = name.slice('.gc-'.length);
  const cut = rest.lastIndexOf('-');
  const id = cut < 0 ? rest : rest.slice(0, cut);
  return JOB_ID_PATTERN.test(id) ? id : undefined;
}

export function assertJobId(value: string): string {
  if (!isJobId(value)) {
    throw new FsjobError('INVALID_ID', `not a job id: ${JSON.stringify(value).slice(0, 80)} (ids look like 1764476044123456789-3fa2c1d09b8e7f64)`, {
      clause: 'LAYOUT-4',
    });
  }
  return value;
}

/** Ready entry name for a priority and id (LAYOUT-7): byte order = priority, then FIFO. */
export function readyEntryName(priority: number, id: string): string {
  return `${String(1000 - priority).padStart(4, '0')}-${id}`;
}

/**
 * The id a ready entry names, or undefined for a name that is not an entry:
 * the one statement of the rule, without building the entry's parts (a
 * count over 100,000 entries needs no match array and no object per entry).
 */
export function readyEntryId(name: string): string | undefined {
  // Four digits compare as text: "2000" is the largest encoded priority.
  return READY_ENTRY.test(name) && name.slice(0, 4) <= '2000' ? name.slice(5) : undefined;
}

export function parseReadyEntry(name: string): { priority: number; id: string } | undefined {
  const id = readyEntryId(name);
  return id === undefined ? undefined : { priority: 1000 - Number(name.slice(0, 4)), id };
}

/** SHA-256 hex of a key's UTF-8 bytes: the directory name of its holds (LAYOUT-8). */
export function keyHash(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** The directory name of slot `slot` of a lane (LANE-6): the key's own for slot 1, of key, line feed and slot above. */
export function slotHash(key: string, slot: number): string {
  return slot <= 1 ? keyHash(key) : keyHash(`${key}\n${slot}`);
}

/** The name of a gated job's directory in jobs/ (GATE-1): its id and `.gated`. */
export function gatedName(id: string): string {
  return `${assertJobId(id)}${GATED_SUFFIX}`;
}

/** The kinds of names a job directory may hold (LAYOUT-5, LAYOUT-6). */
export type JobEntry =
  | { kind: 'spec' }
  | { kind: 'stdin' }
  | { kind: 'claim' | 'exec' | 'state' | 'end'; gen: number }
  | { kind: 'stdout' | 'stderr'; gen: number }
  | { kind: 'cancel'; force: boolean }
  | { kind: 'release' }
  | { kind: 'receipt' }
  | { kind: 'temp' }
  | { kind: 'unknown' };

const GEN_RECORD = /^(claim|exec|state|end)\.([0-9]+)\.json$/;
const GEN_OUTPUT = /^(stdout|stderr)\.([0-9]+)$/;

export function classifyJobEntry(name: string): JobEntry {
  if (name.startsWith('.')) return { kind: 'temp' };
  if (name === 'spec.json') return { kind: 'spec' };
  if (name === 'stdin') return { kind: 'stdin' };
  if (name === 'receipt.json') return { kind: 'receipt' };
  if (name === 'cancel.json') return { kind: 'cancel', force: false };
  if (name === 'cancel-force.json') return { kind: 'cancel', force: true };
  if (name === 'release.json') return { kind: 'release' };
  let match = GEN_RECORD.exec(name);
  if (match !== null) {
    const gen = parseGeneration(match[2] as string);
    return gen === undefined ? { kind: 'unknown' } : { kind: match[1] as 'claim' | 'exec' | 'state' | 'end', gen };
  }
  match = GEN_OUTPUT.exec(name);
  if (match !== null) {
    const gen = parseGeneration(match[2] as string);
    return gen === undefined ? { kind: 'unknown' } : { kind: match[1] as 'stdout' | 'stderr', gen };
  }
  return { kind: 'unknown' };
}

/**
 * Path builders over one queue root. The root is absolute and already
 * checked (SEC-1). Paths are joined by hand, not by path.join: the root is
 * resolved once here and every name below it is a checked single
 * component, so path.join's normalisation (a loop over the whole path, a
 * few calls per job) would change nothing; a name that is not one plain
 * component still goes through it.
 */
export class QueuePaths {
  readonly root: string;
  /** The root with the separator its children follow ("/" alone for the filesystem root). */
  private readonly prefix: string;

  constructor(root: string) {
    this.root = path.resolve(root);
    this.prefix = this.root.endsWith('/') ? this.root : `${this.root}/`;
  }

  dir(name: QueueDir): string {
    return this.prefix + name;
  }

  queueRecord(): string {
    return this.prefix + QUEUE_RECORD;
  }

  pauseRecord(): string {
    return this.prefix + PAUSE_RECORD;
  }

  job(id: string): string {
    return `${this.prefix}jobs/${assertJobId(id)}`;
  }

  /** jobs/<id>.gated: the job's directory while it is gated (GATE-1). */
  gatedJob(id: string): string {
    return `${this.prefix}jobs/${gatedName(id)}`;
  }

  jobFile(id: string, name: string): string {
    return plainComponent(name) ? `${this.job(id)}/${name}` : path.join(this.job(id), name);
  }

  staging(id: string): string {
    return `${this.prefix}tmp/${assertJobId(id)}`;
  }

  ready(priority: number, id: string): string {
    return `${this.prefix}ready/${readyEntryName(priority, assertJobId(id))}`;
  }

  holdDir(kind: 'dedupe' | 'lanes', key: string): string {
    return `${this.prefix}${kind}/${keyHash(key)}`;
  }

  worker(workerId: string): string {
    if (!WORKER_ID_PATTERN.test(workerId)) {
      throw new FsjobError('INVALID_ID', `not a worker id: ${JSON.stringify(workerId).slice(0, 40)}`, { clause: 'LAYOUT-9' });
    }
    return `${this.prefix}workers/${workerId}.json`;
  }
}

/** A name path.join would leave as it is below a directory: one component, not "." or "..". */
function plainComponent(name: string): boolean {
  return name !== '' && name !== '.' && name !== '..' && !name.includes('/');
}

export const genRecordName = (kind: 'claim' | 'exec' | 'state' | 'end', gen: number): string => `${kind}.${gen}.json`;
export const outputName = (stream: 'stdout' | 'stderr', gen: number): string => `${stream}.${gen}`;
