/**
 * A minimal producer for consumer tests: publishes jobs through the core
 * primitives exactly as spec/producer.md says (staging in tmp/<id>/,
 * stdin and spec.json created exclusively and fsynced, the staging
 * directory fsynced, the ready entry, then renameNoReplace into jobs/).
 * No dedupe keys. The real producer (src/producer) may replace it.
 */
import { tmpdir } from 'node:os';
import { initQueue, type Queue } from '../../src/model/queue.ts';
import { selfIdentity } from '../../src/model/identity.ts';
import { encodeRecord, type JobRequest, type JsonValue, type SpecRecord } from '../../src/records/codec.ts';
import { createExclusive, ensurePrivateDir, fsyncDir, renameNoReplace } from '../../src/fs/safefs.ts';
import { readyEntryName } from '../../src/model/layout.ts';
import { newJobId } from '../../src/producer/id.ts';
import { specRecord } from '../../conformance/runner/fixtures.ts';
import { freshDir } from './helpers.ts';

export interface TestRequest {
  argv?: [string, ...string[]];
  handler?: string;
  payload?: JsonValue;
  cwd?: string;
  env?: Record<string, string>;
  stdin?: string | Buffer;
  timeout_ms?: number;
  kill_grace_ms?: number;
  queue_deadline_ms?: number | null;
  max_attempts?: number;
  retry_delay_ms?: number;
  priority?: number;
  lane?: string | null;
  preemptible?: boolean;
  max_output_bytes?: number;
  labels?: Record<string, string>;
  /** Overrides created_ms (to make a job look old). */
  created_ms?: number;
}

/** LAYOUT-4 ids, strictly increasing within this process so FIFO order is enqueue order (the producer's own). */
export { newJobId };

async function writeExclusive(dir: string, name: string, bytes: Buffer, queue: Queue): Promise<void> {
  const handle = await createExclusive(dir, name, undefined, queue.fsOptions);
  try {
    let offset = 0;
    while (offset < bytes.length) offset += (await handle.write(bytes, offset, bytes.length - offset, offset)).bytesWritten;
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Enqueue (spec/producer.md) steps 2 to 8 for already built spec bytes. */
export async function publishStaged(queue: Queue, id: string, specBytes: Buffer, priority: number, stdin?: Buffer): Promise<string> {
  const staging = queue.paths.staging(id);
  await ensurePrivateDir(staging, queue.fsOptions);
  if (stdin !== undefined) await writeExclusive(staging, 'stdin', stdin, queue);
  await writeExclusive(staging, 'spec.json', specBytes, queue);
  await fsyncDir(staging, queue.fsOptions);
  const ready = await createExclusive(queue.paths.dir('ready'), readyEntryName(priority, id), undefined, queue.fsOptions); // ENQ-2
  await ready.close();
  await renameNoReplace(staging, queue.paths.job(id), queue.fsOptions); // ENQ-3, ENQ-4
  return id;
}

/** The spec the reference producer would write for this request (conformance/runner/fixtures.ts); cwd defaults to the temporary directory, outside any queue. */
export async function buildSpec(id: string, request: TestRequest): Promise<SpecRecord> {
  const { created_ms: createdMs, stdin, ...rest } = request;
  const job: JobRequest = rest.handler !== undefined ? { ...rest, payload: rest.payload ?? null } : { ...rest, argv: rest.argv ?? ['true'] };
  const asked: JobRequest = { ...job, cwd: request.cwd ?? tmpdir(), ...(stdin === undefined ? {} : { stdin_base64: Buffer.from(stdin).toString('base64') }) };
  return specRecord(id, asked, await selfIdentity(), createdMs ?? Date.now()).spec;
}

/** Enqueue one job (spec/producer.md); resolves to its id. */
export async function enqueue(queue: Queue, request: TestRequest): Promise<string> {
  const id = newJobId();
  const spec = await buildSpec(id, request);
  const stdin = request.stdin === undefined ? undefined : Buffer.from(request.stdin);
  return publishStaged(queue, id, encodeRecord('spec', spec), spec.priority, stdin);
}

/** Enqueue a job whose spec.json holds these raw bytes (an invalid spec, written raw). */
export async function enqueueRaw(queue: Queue, specBytes: string | Buffer, priority = 0): Promise<string> {
  return publishStaged(queue, newJobId(), Buffer.from(specBytes), priority);
}

/** A fresh queue in a private temporary directory. */
export async function freshQueue(label = 'fsjob-q'): Promise<Queue> {
  const dir = await freshDir(label);
  return initQueue(`${dir}/q`);
}
