/**
 * A minimal producer for consumer tests: publishes jobs through the core
 * primitives exactly as spec section 6.2 says (staging in tmp/<id>/,
 * stdin and spec.json created exclusively and fsynced, the staging
 * directory fsynced, the ready entry, then renameNoReplace into jobs/).
 * No dedupe keys. The real producer (src/producer) may replace it.
 */
import { createHash } from 'node:crypto';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { initQueue, type Queue } from '../../src/model/queue.ts';
import { selfIdentity } from '../../src/model/identity.ts';
import { encodeRecord, type JsonValue, type SpecRecord } from '../../src/records/codec.ts';
import { createExclusive, ensurePrivateDir, fsyncDir, renameNoReplace } from '../../src/fs/safefs.ts';
import { readyEntryName } from '../../src/model/layout.ts';
import { KILL_GRACE_DEFAULT, OUTPUT_DEFAULT, PROTOCOL_VERSION, TIMEOUT_DEFAULT } from '../../src/base/constants.ts';
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

let lastNs = 0n;
/** LAYOUT-4 ids, strictly increasing within this process so FIFO order is enqueue order. */
export function newJobId(): string {
  let ns = BigInt(Date.now()) * 1_000_000n;
  if (ns <= lastNs) ns = lastNs + 1n;
  lastNs = ns;
  return `${ns.toString().padStart(19, '0')}-${randomBytes(8).toString('hex')}`;
}

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

/** Section 6.2 steps 2 to 8 for already built spec bytes. */
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

export async function buildSpec(id: string, request: TestRequest): Promise<SpecRecord> {
  const stdin = request.stdin === undefined ? undefined : Buffer.from(request.stdin);
  const spec: SpecRecord = {
    fsjob: PROTOCOL_VERSION,
    type: 'spec',
    id,
    created_ms: request.created_ms ?? Date.now(),
    ...(request.handler !== undefined ? { handler: request.handler, payload: request.payload ?? null } : { argv: request.argv ?? ['true'] }),
    cwd: request.cwd ?? tmpdir(),
    env: request.env ?? {},
    stdin: stdin === undefined ? null : { bytes: stdin.length, sha256: createHash('sha256').update(stdin).digest('hex') },
    timeout_ms: request.timeout_ms ?? TIMEOUT_DEFAULT,
    kill_grace_ms: request.kill_grace_ms ?? KILL_GRACE_DEFAULT,
    queue_deadline_ms: request.queue_deadline_ms ?? null,
    max_attempts: request.max_attempts ?? 1,
    retry_delay_ms: request.retry_delay_ms ?? 0,
    priority: request.priority ?? 0,
    lane: request.lane ?? null,
    dedupe: null,
    preemptible: request.preemptible ?? false,
    max_output_bytes: request.max_output_bytes ?? OUTPUT_DEFAULT,
    labels: request.labels ?? {},
    producer: await selfIdentity(),
  };
  return spec;
}

/** Enqueue one job (section 6.2); resolves to its id. */
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
  return (await initQueue(`${dir}/q`)).queue;
}
