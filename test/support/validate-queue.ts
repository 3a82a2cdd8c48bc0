/**
 * Realistic queues for the validator tests, built through the core
 * primitives exactly as the spec's protocols do (spec/producer.md and spec/claim.md): staging in
 * tmp/, spec.json, the ready entry, renameNoReplace into jobs/; claims, exec,
 * end and receipt records by publishRecord link; outputs created
 * exclusively. A test then plants one hazard and checks the finding.
 */
import { createHash } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { lstat, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import { LEASE_DEFAULT, OUTCOME_EXIT, PROTOCOL_VERSION } from '../../src/base/constants.ts';
import { newJobId } from '../../src/producer/id.ts';
import { cancelRecord, claimRecord, deadOwner, endRecord, execRecord, receiptRecord, specRecord, stateRecord } from '../../conformance/runner/fixtures.ts';
import type { Finding, FindingCode } from '../../src/records/findings.ts';
import { processStart, selfIdentity, type Identity } from '../../src/model/identity.ts';
import { genRecordName, keyHash, outputName, readyEntryName, slotHash } from '../../src/model/layout.ts';
import { initQueue, type Queue } from '../../src/model/queue.ts';
import {
  encodeRecord,
  type ClaimRecord,
  type EndRecord,
  type ExecRecord,
  type Group,
  type HoldRecord,
  type OutputSummary,
  type ReceiptRecord,
  type SpecRecord,
  type StateRecord,
  type WorkerRecord,
} from '../../src/records/codec.ts';
import { createExclusive, ensurePrivateDir, fsyncDir, publishRecord, removeTree, renameNoReplace } from '../../src/fs/safefs.ts';
import { auditQueue, type QueueAudit, type QueueAuditOptions } from '../../src/validator/queue.ts';
import { freshDir } from './helpers.ts';

/** LAYOUT-4: strictly increasing within this process (the producer's own ids). */
export { newJobId };

export async function newQueue(label = 'vq'): Promise<Queue> {
  const dir = await freshDir(label);
  return initQueue(join(dir, 'q'));
}

export type SpecFields = Partial<Omit<SpecRecord, 'fsjob' | 'type' | 'id' | 'producer'>> & { stdinBytes?: Buffer };

/** ENQ-1..ENQ-4 through the core primitives. Returns the id and the spec written. */
/** A job planted as its producer would publish it; `gated` puts it at jobs/<id>.gated (GATE-1), as any job with after or a hold. */
export async function enqueue(queue: Queue, fields: SpecFields = {}, options: { gated?: boolean } = {}): Promise<{ id: string; spec: SpecRecord }> {
  const id = newJobId();
  const { stdinBytes, ...rest } = fields;
  // The producer's defaults (conformance/runner/fixtures.ts), then the fields this test sets: any spec member, planted as it is.
  const base = specRecord(id, rest.handler === undefined ? { argv: ['true'], cwd: '/' } : { handler: rest.handler, cwd: '/' }, await selfIdentity()).spec;
  const spec = { ...base, stdin: stdinBytes === undefined ? null : { bytes: stdinBytes.length, sha256: sha256(stdinBytes) }, ...rest } as SpecRecord;
  const opts = queue.fsOptions;
  const staging = queue.paths.staging(id);
  await ensurePrivateDir(staging, opts);
  if (stdinBytes !== undefined) await writeNew(staging, 'stdin', stdinBytes, queue);
  await writeNew(staging, 'spec.json', encodeRecord('spec', spec, { expectedJobId: id }), queue);
  await fsyncDir(staging, opts);
  // DEDUPE-2 without the "is it held" check: tests plant conflicts on purpose.
  if (spec.dedupe !== null) await publishHold(queue, 'dedupe', spec.dedupe, (await highestHold(queue, 'dedupe', spec.dedupe)) + 1, id, null);
  const ready = await createExclusive(queue.paths.dir('ready'), readyEntryName(spec.priority, id), 0o600, opts);
  await ready.sync();
  await ready.close();
  const gated = options.gated ?? (spec.after !== undefined || spec.hold === true);
  await renameNoReplace(staging, gated ? queue.paths.gatedJob(id) : queue.paths.job(id), opts);
  return { id, spec };
}

async function writeNew(dir: string, name: string, bytes: Buffer, queue: Queue): Promise<void> {
  const handle = await createExclusive(dir, name, 0o600, queue.fsOptions);
  try {
    await handle.write(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export function sha256(bytes: Buffer | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** CLAIM-5: publish claim.<g>.json by link. */
export async function claim(queue: Queue, id: string, gen: number, fields: Partial<ClaimRecord> = {}): Promise<ClaimRecord> {
  const record = claimRecord(id, gen, await selfIdentity(), Date.now(), LEASE_DEFAULT, fields);
  await publishRecord(queue.paths.job(id), genRecordName('claim', gen), encodeRecord('claim', record), 'link', queue.fsOptions);
  return record;
}

/** EXEC-1 then EXEC-3: create the outputs exclusively (with `stdout`/`stderr` content), then publish exec.<g>.json. */
export async function exec(
  queue: Queue,
  id: string,
  gen: number,
  fields: Partial<ExecRecord> & { stdout?: string; stderr?: string; outputs?: boolean } = {},
): Promise<ExecRecord> {
  const { stdout = '', stderr = '', outputs = true, ...rest } = fields;
  const dir = queue.paths.job(id);
  if (outputs) {
    await writeNew(dir, outputName('stdout', gen), Buffer.from(stdout), queue);
    await writeNew(dir, outputName('stderr', gen), Buffer.from(stderr), queue);
  }
  const record = execRecord(id, gen, await selfIdentity(), rest);
  await publishRecord(dir, genRecordName('exec', gen), encodeRecord('exec', record), 'link', queue.fsOptions);
  return record;
}

export async function state(queue: Queue, id: string, gen: number, fields: Partial<StateRecord> = {}): Promise<void> {
  const record = stateRecord(id, gen, { phase: 'running', attempt: 1, ...fields });
  await publishRecord(queue.paths.job(id), genRecordName('state', gen), encodeRecord('state', record), 'rename', queue.fsOptions);
}

export async function end(queue: Queue, id: string, gen: number, fields: Partial<EndRecord> = {}): Promise<void> {
  const reason = fields.reason ?? 'failed';
  const record = endRecord(id, gen, {
    reason,
    counted: reason === 'failed' || reason === 'timed_out' || reason === 'shutdown',
    status: reason === 'failed' ? { exit: 1, signal: null } : null,
    ...fields,
  });
  await publishRecord(queue.paths.job(id), genRecordName('end', gen), encodeRecord('end', record), 'link', queue.fsOptions);
}

export async function cancel(queue: Queue, id: string, force = false): Promise<void> {
  const record = cancelRecord(id, force, await selfIdentity());
  await publishRecord(queue.paths.job(id), force ? 'cancel-force.json' : 'cancel.json', encodeRecord('cancel', record), 'link', queue.fsOptions);
}

/** RCPT-5: the summary of an output file as it is on disk. */
export async function outputSummary(queue: Queue, id: string, stream: 'stdout' | 'stderr', gen: number): Promise<OutputSummary> {
  const bytes = await readFile(join(queue.paths.job(id), outputName(stream, gen)));
  return { gen, bytes_total: bytes.length, bytes_kept: bytes.length, truncated: false, sha256: sha256(bytes) };
}

/** RCPT-2..RCPT-4 and READY-2: the receipt (outputs described from disk when gen `outputsOf` ran), then the ready entry goes. */
export async function receipt(
  queue: Queue,
  id: string,
  gen: number,
  fields: Partial<ReceiptRecord> & { outputsOf?: number | null } = {},
): Promise<ReceiptRecord> {
  const { outputsOf = gen, ...rest } = fields;
  const outcome = rest.outcome ?? 'succeeded';
  const exitCode = outcome === 'succeeded' ? 0 : outcome === 'failed' ? 1 : OUTCOME_EXIT[outcome];
  const record = receiptRecord(id, gen, await selfIdentity(), {
    outcome,
    exit_code: exitCode,
    reason: outcome === 'lost' ? 'owner_lost' : outcome === 'rejected' ? 'invalid_spec' : null,
    attempts: outputsOf === null ? 0 : 1,
    status: outputsOf === null ? null : { exit: exitCode, signal: null },
    started_ms: outputsOf === null ? null : Date.now(),
    // Described from disk unless the caller says what the receipt claims (given fields win below).
    stdout: outputsOf === null || 'stdout' in rest ? null : await outputSummary(queue, id, 'stdout', outputsOf),
    stderr: outputsOf === null || 'stderr' in rest ? null : await outputSummary(queue, id, 'stderr', outputsOf),
    ...rest,
  });
  await publishRecord(queue.paths.job(id), 'receipt.json', encodeRecord('receipt', record, { expectedJobId: id }), 'link', queue.fsOptions);
  await removeReady(queue, id);
  return record;
}

export async function removeReady(queue: Queue, id: string): Promise<void> {
  for (const name of await readdir(queue.paths.dir('ready'))) {
    if (name.endsWith(`-${id}`)) await removeTree(join(queue.paths.dir('ready'), name), queue.fsOptions);
  }
}

/** A whole successful run of generation 1: claim, exec with outputs, receipt. */
export async function finishedJob(queue: Queue, fields: SpecFields = {}, stdout = 'hello\n'): Promise<string> {
  const { id } = await enqueue(queue, fields);
  await claim(queue, id, 1);
  await exec(queue, id, 1, fields.handler === undefined ? { stdout } : { stdout, group: null });
  await receipt(queue, id, 1);
  return id;
}

/** The highest hold number of a key, 0 when there is none. */
export async function highestHold(queue: Queue, kind: 'dedupe' | 'lanes', key: string): Promise<number> {
  let names: string[] = [];
  try {
    names = await readdir(join(queue.root, kind, keyHash(key)));
  } catch {
    return 0;
  }
  return Math.max(0, ...names.filter((name) => /^[1-9][0-9]*\.json$/.test(name)).map((name) => Number(name.slice(0, -5))));
}

export async function publishHold(queue: Queue, kind: 'dedupe' | 'lanes', key: string, n: number, jobId: string, gen: number | null, owner?: Identity, slot = 1): Promise<void> {
  const dir = join(queue.root, kind, slotHash(key, slot));
  await ensurePrivateDir(dir, queue.fsOptions);
  const record: HoldRecord = {
    fsjob: PROTOCOL_VERSION,
    type: 'hold',
    kind: kind === 'dedupe' ? 'dedupe' : 'lane',
    key,
    job_id: jobId,
    gen,
    owner: owner ?? (await selfIdentity()),
    created_ms: Date.now(),
    ...(slot > 1 ? { slot } : {}),
  };
  await publishRecord(dir, `${n}.json`, encodeRecord('hold', record), 'link', queue.fsOptions);
}

export async function registerWorker(queue: Queue, workerId: string, fields: Partial<WorkerRecord> = {}): Promise<void> {
  const record: WorkerRecord = {
    fsjob: PROTOCOL_VERSION,
    type: 'worker',
    worker_id: workerId,
    owner: await selfIdentity(),
    started_ms: Date.now(),
    heartbeat_ms: Date.now(),
    lease_ms: 30_000,
    concurrency: 1,
    mode: 'serving',
    jobs: [],
    handlers: [],
    ...fields,
  };
  await publishRecord(queue.paths.dir('workers'), `${workerId}.json`, encodeRecord('worker', record), 'rename', queue.fsOptions);
}

// ---------------------------------------------------------------- a small consumer

/**
 * Run generation `gen` of a command job for real, in its own process group,
 * and leave on disk what a consumer leaves: outputs, the exec record naming
 * the group, then the receipt with the status (or an end record when the
 * command failed and attempts remain, RETRY-3). The order of the writes is
 * simplified (the real consumer records the group before the command starts,
 * EXEC-2); the audit only sees the result.
 */
export async function runJob(queue: Queue, id: string, gen: number, spec: SpecRecord, attempt = 1): Promise<void> {
  const dir = queue.paths.job(id);
  const argv = (spec.argv ?? ['true']).map((arg) => {
    if (typeof arg !== 'string') throw new Error("runJob runs text arguments only; the byte form (SPEC-3) is the real consumer's to run");
    return arg;
  });
  const child = spawn(argv[0] as string, argv.slice(1), { detached: true, stdio: ['ignore', 'pipe', 'pipe'], cwd: spec.cwd });
  const chunks = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
  child.stdout?.on('data', (chunk: Buffer) => chunks.stdout.push(chunk));
  child.stderr?.on('data', (chunk: Buffer) => chunks.stderr.push(chunk));
  const exited = new Promise<number>((resolve) => child.once('close', (code) => resolve(code ?? 128)));
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  const pid = child.pid as number;
  const started = (await processStart(pid))?.start ?? '0';
  const self = await selfIdentity();
  const group: Group = { pgid: pid, start: started, boot_id: self.boot_id, pid_ns: self.pid_ns };
  const startedMs = Date.now();
  const code = await exited;
  await writeNew(dir, outputName('stdout', gen), Buffer.concat(chunks.stdout), queue);
  await writeNew(dir, outputName('stderr', gen), Buffer.concat(chunks.stderr), queue);
  const record: ExecRecord = { fsjob: PROTOCOL_VERSION, type: 'exec', job_id: id, gen, attempt, group, recorded_ms: startedMs };
  await publishRecord(dir, genRecordName('exec', gen), encodeRecord('exec', record), 'link', queue.fsOptions);
  if (code !== 0 && attempt < spec.max_attempts) {
    await end(queue, id, gen, { reason: 'failed', status: { exit: code, signal: null } });
    return;
  }
  await receipt(queue, id, gen, {
    outcome: code === 0 ? 'succeeded' : 'failed',
    exit_code: code,
    attempts: attempt,
    status: { exit: code, signal: null },
    started_ms: startedMs,
  });
}

// ---------------------------------------------------------------- processes

const children: ChildProcess[] = [];

/** A detached `sleep` leading its own process group, and its recorded group (EXEC-3). */
export async function liveGroup(): Promise<{ child: ChildProcess; group: Group; owner: Identity }> {
  const child = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  const pid = child.pid as number;
  const info = await processStart(pid);
  if (info === null) throw new Error('child vanished');
  const self = await selfIdentity();
  return { child, group: { pgid: pid, start: info.start, boot_id: self.boot_id, pid_ns: self.pid_ns }, owner: { ...self, pid, start: info.start } };
}

/** The identity of a process that existed and is now dead and reaped. */
export const deadIdentity = deadOwner;

export async function killChildren(): Promise<void> {
  for (const child of children.splice(0)) {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
}

// ---------------------------------------------------------------- audits

export async function audit(queue: Queue, options: QueueAuditOptions = {}): Promise<QueueAudit> {
  return auditQueue(queue.root, options);
}

export function only(result: QueueAudit, code: FindingCode): Finding[] {
  return result.findings.filter((finding) => finding.code === code);
}

/** Exactly one finding of `code`, at `path`, citing `clause`, about `jobId`. */
export function expectFinding(result: QueueAudit, code: FindingCode, expected: { path: string; clause: string; jobId?: string | null; severity?: Finding['severity']; field?: string }): Finding {
  const found = only(result, code);
  const summary = JSON.stringify(result.findings.map((finding) => [finding.code, finding.path, finding.clause]), null, 1);
  assert.is(found.length, 1, `one ${code} finding expected; findings: ${summary}`);
  const finding = found[0] as Finding;
  assert.is(finding.path, expected.path, `${code} path`);
  assert.is(finding.clause, expected.clause, `${code} clause`);
  if (expected.jobId !== undefined) assert.is(finding.job_id, expected.jobId, `${code} job_id`);
  if (expected.severity !== undefined) assert.is(finding.severity, expected.severity, `${code} severity`);
  if (expected.field !== undefined) assert.is(finding.field, expected.field, `${code} field`);
  return finding;
}

/** The codes of every finding, for "nothing else" assertions. */
export function codes(result: QueueAudit): string[] {
  return result.findings.map((finding) => finding.code);
}

// ---------------------------------------------------------------- snapshots

export interface EntrySnapshot {
  type: string;
  mode: number;
  uid: number;
  size: number;
  mtimeNs: bigint;
  ctimeNs: bigint;
  ino: bigint;
  sha256?: string;
}

/** Every entry under `root` (never following links, never opening a FIFO or socket): lstat facts and the digest of regular files. */
export async function snapshot(root: string): Promise<Map<string, EntrySnapshot>> {
  const out = new Map<string, EntrySnapshot>();
  const walk = async (path: string, rel: string): Promise<void> => {
    const stats = await lstat(path, { bigint: true });
    const type = stats.isFile() ? 'file' : stats.isDirectory() ? 'dir' : stats.isSymbolicLink() ? 'symlink' : stats.isFIFO() ? 'fifo' : stats.isSocket() ? 'socket' : 'other';
    const entry: EntrySnapshot = { type, mode: Number(stats.mode), uid: Number(stats.uid), size: Number(stats.size), mtimeNs: stats.mtimeNs, ctimeNs: stats.ctimeNs, ino: stats.ino };
    if (type === 'file') entry.sha256 = sha256(await readFile(path));
    out.set(rel, entry);
    if (type === 'dir') for (const name of (await readdir(path)).sort()) await walk(join(path, name), `${rel}/${name}`);
  };
  await walk(root, '.');
  return out;
}

/** At least one finding of `code` at `path` citing `clause` (and naming `field`, when given). */
export function expectSome(result: QueueAudit, code: FindingCode, expected: { path: string; clause: string; jobId?: string | null; field?: string }): Finding {
  const found = result.findings.find(
    (finding) =>
      finding.code === code &&
      finding.path === expected.path &&
      finding.clause === expected.clause &&
      (expected.jobId === undefined || finding.job_id === expected.jobId) &&
      (expected.field === undefined || finding.field === expected.field),
  );
  const summary = JSON.stringify(result.findings.map((finding) => [finding.code, finding.path, finding.clause, finding.field]), null, 1);
  assert.ok(found !== undefined, `a ${code} finding at ${expected.path} [${expected.clause}] ${expected.field ?? ''} expected; findings: ${summary}`);
  return found as Finding;
}
