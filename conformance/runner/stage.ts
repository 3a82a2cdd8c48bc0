/**
 * Fixtures the runner writes itself: jobs staged exactly as spec/producer.md says
 * (through the record layer and safefs, the same primitives the reference
 * uses), and records planted on purpose (hostile input, foreign claims, dead
 * owners). Cases that test a consumer against a precise starting state use
 * these instead of a producer, so the state is the same for every
 * implementation and costs milliseconds.
 */
import { createHash } from 'node:crypto';
import { chmod, lstat, mkdir, open, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { dedupeHeld, takeHold } from '../../src/model/holds.ts';
import { selfIdentity, type Identity } from '../../src/model/identity.ts';
import { readyEntryName } from '../../src/model/layout.ts';
import { initQueue, openQueue, type Queue } from '../../src/model/queue.ts';
import { encodeRecord, serializeRecord, type JobRequest, type RecordByType, type RecordType, type SpecRecord } from '../../src/records/codec.ts';
import { createExclusive, ensurePrivateDir, fsyncDir, publishRecord, renameNoReplace } from '../../src/fs/safefs.ts';
import { newJobId } from '../../src/producer/id.ts';
import { PROTOCOL_VERSION } from '../../src/base/constants.ts';
import type { CaseContext } from './case.ts';
import { specRecord } from './fixtures.ts';

export function sha256Hex(bytes: Uint8Array | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export async function createQueue(root: string): Promise<Queue> {
  return initQueue(root);
}

export interface StageOptions {
  /** Fix created_ms (queue deadlines in the past). */
  createdMs?: number;
  /** Take the dedupe hold when the request has a key (default true). */
  dedupeHold?: boolean;
  /** Write the ready entry (default true). */
  ready?: boolean;
  /** Rename the staged job into jobs/ (default true); false leaves it in tmp/<id>/ as a producer between its steps 5 and 7. */
  publish?: boolean;
  /** Publish it gated, at jobs/<id>.gated (GATE-1). Default: when the request has after or a hold of true. */
  gated?: boolean;
  /** Publish release.json in it too (a released held job, HOLD-2). */
  released?: boolean;
}

export interface Staged {
  id: string;
  spec: SpecRecord;
  dir: string;
}

/** Publishes a job as spec/producer.md says: staged in tmp/<id>/, indexed, renamed into jobs/. */
export async function stageJob(queue: Queue, request: JobRequest, options: StageOptions = {}): Promise<Staged> {
  const id = newJobId();
  const producer = await selfIdentity();
  const { spec, stdin } = specRecord(id, request, producer, options.createdMs ?? Date.now());
  const staging = queue.paths.staging(id);
  await ensurePrivateDir(staging, queue.fsOptions);
  if (stdin !== null) await writeData(staging, 'stdin', stdin, queue);
  await writeData(staging, 'spec.json', encodeRecord('spec', spec, { expectedJobId: id }), queue);
  await fsyncDir(staging, queue.fsOptions);
  if (spec.dedupe !== null && options.dedupeHold !== false) {
    const taken = await takeHold(queue, 'dedupe', spec.dedupe, (hold) => dedupeHeld(queue, hold), { jobId: id, gen: null });
    if (!taken.taken) throw new Error(`stageJob: dedupe key ${spec.dedupe} is held`);
  }
  if (options.ready !== false) {
    const handle = await createExclusive(queue.paths.dir('ready'), readyEntryName(spec.priority, id), 0o600, queue.fsOptions);
    await handle.sync();
    await handle.close();
    await fsyncDir(queue.paths.dir('ready'), queue.fsOptions);
  }
  if (options.released === true) {
    const release: RecordByType['release'] = { fsjob: PROTOCOL_VERSION, type: 'release', job_id: id, released_ms: Date.now(), by: producer };
    await plantRecord(queue, staging, 'release.json', 'release', release);
  }
  if (options.publish === false) return { id, spec, dir: staging };
  const gated = options.gated ?? (spec.after !== undefined || spec.hold === true);
  const dir = gated ? queue.paths.gatedJob(id) : queue.paths.job(id);
  await renameNoReplace(staging, dir, queue.fsOptions);
  return { id, spec, dir };
}

async function writeData(dir: string, name: string, bytes: Uint8Array, queue: Queue): Promise<void> {
  const handle = await createExclusive(dir, name, 0o600, queue.fsOptions);
  try {
    await handle.write(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Publishes a record by link in a directory of the queue (a planted, but well-formed, record). */
export async function plantRecord<T extends RecordType>(queue: Queue, dir: string, name: string, type: T, value: RecordByType[T]): Promise<string> {
  return publishRecord(dir, name, encodeRecord(type, value), 'link', queue.fsOptions);
}

/** Writes raw bytes at a path (no protocol at all: hostile or damaged files). */
export async function plantBytes(file: string, bytes: Uint8Array | string, mode = 0o600): Promise<void> {
  await writeFile(file, bytes, { mode, flag: 'wx' });
  await chmod(file, mode);
}

export async function reopen(root: string): Promise<Queue> {
  return openQueue(root);
}

/** Identity of a process on this host as a record holds it (the runner's boot id, namespace and uid). */
export async function localIdentity(pid: number, start: string): Promise<Identity> {
  const self = await selfIdentity();
  return { ...self, pid, start };
}

export function compact(value: unknown): Buffer {
  return serializeRecord(value);
}

/** Request files (MANIFEST-2): compact form, one line feed, outside the queue. */
export async function writeRequest(dir: string, name: string, request: JobRequest): Promise<string> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, `${name}.json`);
  // Compact form as a record's (MANIFEST-2), but bounded by REQUEST_MAX, not RECORD_MAX (REQ-1).
  await writeFile(file, `${JSON.stringify(request)}\n`, { mode: 0o600 });
  return file;
}

/** Content and mtime of a file or a whole tree outside the queue, to prove nothing changed it. */
export async function fingerprint(target: string): Promise<string> {
  const parts: string[] = [];
  const walk = async (p: string, rel: string): Promise<void> => {
    let st;
    try {
      st = await lstat(p);
    } catch {
      parts.push(`${rel}: missing`);
      return;
    }
    const head = `${rel}: mode ${(st.mode & 0o7777).toString(8)} uid ${st.uid} mtime ${st.mtimeMs}`;
    if (st.isDirectory()) {
      const { readdir } = await import('node:fs/promises');
      const names = (await readdir(p)).sort();
      parts.push(`${head} dir [${names.join(' ')}]`);
      for (const name of names) await walk(path.join(p, name), `${rel}/${name}`);
    } else if (st.isFile()) {
      parts.push(`${head} size ${st.size} sha256 ${sha256Hex(await readFile(p))}`);
    } else {
      parts.push(`${head} ${st.isSymbolicLink() ? 'symlink' : 'special'}`);
    }
  };
  await walk(target, path.basename(target));
  return parts.join('\n');
}

/** Opens a file for appending only (used to prove a FIFO is never opened blocking: we never do either). */
export async function touch(file: string): Promise<void> {
  const handle = await open(file, 'a', 0o600);
  await handle.close();
}

/** A new queue for one flow of a case, its work directory (outside the queue) and the start log there. */
export interface FreshQueue {
  root: string;
  work: string;
  log: string;
  queue: Queue;
}

export async function freshQueue(ctx: CaseContext, label: string): Promise<FreshQueue> {
  const root = await ctx.newQueue(label);
  const work = await ctx.subdir(`${label}/work`);
  return { root, work, log: path.join(work, 'starts.log'), queue: await reopen(root) };
}

/** Rewrites a staged spec so that it is no longer in compact form (an invalid record, CLAIM-6 step 1). */
export async function spoilSpec(job: Staged): Promise<void> {
  const file = path.join(job.dir, 'spec.json');
  const text = await readFile(file, 'utf8');
  await writeFile(file, text.replace('{"fsjob"', '{ "fsjob"'));
}
