/**
 * What a queue holds, read from disk without following anything and without
 * writing, and the invariants of spec/README.md checked on it:
 *
 * - I1 every directory in jobs/ holds a complete, valid spec (and its stdin);
 *   no accepted job is missing;
 * - I2 claim generations form a sequence, nothing of a generation exists
 *   without its claim, and no job was started more often than it may be;
 * - I3 every accepted job has exactly one (valid) receipt;
 * - I4 a receipt's output summaries describe the files exactly;
 * - and every record anywhere in the queue passes the record layer (REC-4);
 *   temporary files and staging directories are allowed.
 *
 * This is a reader of the disk of its own, on purpose, beside the reference's
 * one (src/model/job.ts classifyJob): the suite judges other implementations
 * and the reference alike, so a bug in how the reference lists, orders or
 * judges a job directory must not blind the judge. What it shares with src/
 * is only what the spec fixes to the letter: entry names (model/layout.ts,
 * spec/writing.md's closed list) and the record layer (records/codec.ts: REC-4 and
 * the schemas, which are normative); it walks with lstat and never follows a
 * link or opens a FIFO, without the fs layer's seam, trust cache or policy.
 */
import { createHash } from 'node:crypto';
import { lstat, readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import type { Finding } from '../../src/records/findings.ts';
import { classifyJobEntry } from '../../src/model/layout.ts';
import { readRecord, recordNameOf, type ReceiptRecord, type SpecRecord } from '../../src/records/codec.ts';
import { jobIdOfDirName } from '../../src/records/names.ts';
import type { Failure } from './report.ts';

export interface Entry {
  name: string;
  kind: 'file' | 'dir' | 'symlink' | 'fifo' | 'other';
  size: number;
  mode: number;
  uid: number;
}

export interface JobSnapshot {
  id: string;
  dir: string;
  /** The directory is jobs/<id>.gated (GATE-1). */
  gated: boolean;
  /** A release.json entry exists (HOLD-1). */
  release: boolean;
  entries: Entry[];
  spec?: SpecRecord;
  specFindings: Finding[];
  receipt?: ReceiptRecord;
  receiptFindings: Finding[];
  claims: number[];
  execs: number[];
  ends: number[];
  states: number[];
  stdouts: number[];
  stderrs: number[];
  cancel: boolean;
  cancelForce: boolean;
}

export interface QueueSnapshot {
  root: string;
  jobs: Map<string, JobSnapshot>;
  /** Entries of jobs/ that are not job directories (foreign names, symlinks, files). */
  strayInJobs: Entry[];
  /** Every invalid record, wherever it is (REC-4), with its path relative to the root. */
  invalid: { path: string; findings: Finding[] }[];
  ready: Entry[];
  tmp: Entry[];
}

function kindOf(st: import('node:fs').Stats): Entry['kind'] {
  if (st.isSymbolicLink()) return 'symlink';
  if (st.isFile()) return 'file';
  if (st.isDirectory()) return 'dir';
  if (st.isFIFO()) return 'fifo';
  return 'other';
}

/** The entries of a directory, each lstat-ed; [] when it is missing or not a real directory. */
export async function entriesOf(dir: string): Promise<Entry[]> {
  let st;
  try {
    st = await lstat(dir);
  } catch {
    return [];
  }
  if (!st.isDirectory()) return [];
  const names = (await readdir(dir).catch(() => [] as string[])).sort();
  const entries: Entry[] = [];
  for (const name of names) {
    try {
      const s = await lstat(path.join(dir, name));
      entries.push({ name, kind: kindOf(s), size: s.size, mode: s.mode & 0o7777, uid: s.uid });
    } catch {
      // vanished while listing
    }
  }
  return entries;
}

async function checkRecordAt(root: string, file: string): Promise<{ ok: boolean; value?: unknown; findings: Finding[] } | undefined> {
  const named = recordNameOf(file);
  if (named === undefined) return undefined;
  const rel = path.relative(root, file);
  try {
    const read = await readRecord(file, named.type, { ...named.expectations, root, path: rel, allowMissing: true });
    if (read === undefined) return undefined;
    return read.ok ? { ok: true, value: read.value, findings: read.findings } : { ok: false, findings: read.findings };
  } catch (error) {
    return { ok: false, findings: [{ code: 'RECORD_NOT_REGULAR', severity: 'error', path: rel, job_id: null, clause: 'SEC-3', message: String((error as Error).message) } as Finding] };
  }
}

export async function snapshotQueue(root: string): Promise<QueueSnapshot> {
  const snapshot: QueueSnapshot = { root, jobs: new Map(), strayInJobs: [], invalid: [], ready: [], tmp: [] };
  const note = (file: string, findings: Finding[]): void => {
    snapshot.invalid.push({ path: path.relative(root, file), findings });
  };
  const queueRecord = await checkRecordAt(root, path.join(root, 'fsjob.json'));
  if (queueRecord !== undefined && !queueRecord.ok) note(path.join(root, 'fsjob.json'), queueRecord.findings);

  for (const entry of await entriesOf(path.join(root, 'jobs'))) {
    const id = entry.kind === 'dir' ? jobIdOfDirName(entry.name) : undefined;
    if (id === undefined || snapshot.jobs.has(id)) {
      snapshot.strayInJobs.push(entry);
      continue;
    }
    const dir = path.join(root, 'jobs', entry.name);
    const job: JobSnapshot = {
      id,
      dir,
      gated: entry.name !== id,
      release: false,
      entries: await entriesOf(dir),
      specFindings: [],
      receiptFindings: [],
      claims: [],
      execs: [],
      ends: [],
      states: [],
      stdouts: [],
      stderrs: [],
      cancel: false,
      cancelForce: false,
    };
    for (const item of job.entries) {
      const kind = classifyJobEntry(item.name);
      switch (kind.kind) {
        case 'claim':
          job.claims.push(kind.gen);
          break;
        case 'exec':
          job.execs.push(kind.gen);
          break;
        case 'end':
          job.ends.push(kind.gen);
          break;
        case 'state':
          job.states.push(kind.gen);
          break;
        case 'stdout':
          job.stdouts.push(kind.gen);
          break;
        case 'stderr':
          job.stderrs.push(kind.gen);
          break;
        case 'cancel':
          if (kind.force) job.cancelForce = true;
          else job.cancel = true;
          break;
        case 'release':
          job.release = true;
          break;
        default:
          break;
      }
      if (kind.kind === 'temp' || kind.kind === 'unknown' || kind.kind === 'stdin' || kind.kind === 'stdout' || kind.kind === 'stderr') continue;
      const file = path.join(dir, item.name);
      const read = await checkRecordAt(root, file);
      if (read === undefined) continue;
      if (!read.ok) note(file, read.findings);
      if (kind.kind === 'spec') {
        if (read.ok) job.spec = read.value as SpecRecord;
        else job.specFindings = read.findings;
      }
      if (kind.kind === 'receipt') {
        if (read.ok) job.receipt = read.value as ReceiptRecord;
        else job.receiptFindings = read.findings;
      }
    }
    for (const list of [job.claims, job.execs, job.ends, job.states, job.stdouts, job.stderrs]) list.sort((a, b) => a - b);
    snapshot.jobs.set(job.id, job);
  }
  for (const top of ['dedupe', 'lanes']) {
    for (const keyDir of await entriesOf(path.join(root, top))) {
      if (keyDir.kind !== 'dir') continue;
      for (const hold of await entriesOf(path.join(root, top, keyDir.name))) {
        if (hold.name.startsWith('.')) continue;
        const file = path.join(root, top, keyDir.name, hold.name);
        const read = await checkRecordAt(root, file);
        if (read !== undefined && !read.ok) note(file, read.findings);
      }
    }
  }
  for (const worker of await entriesOf(path.join(root, 'workers'))) {
    if (worker.name.startsWith('.')) continue;
    const file = path.join(root, 'workers', worker.name);
    const read = await checkRecordAt(root, file);
    if (read !== undefined && !read.ok) note(file, read.findings);
  }
  snapshot.ready = await entriesOf(path.join(root, 'ready'));
  snapshot.tmp = await entriesOf(path.join(root, 'tmp'));
  return snapshot;
}

function describeEntry(entry: Entry): string {
  const kind = entry.kind === 'file' ? `${entry.size}` : entry.kind;
  return `${entry.name}(${kind})`;
}

/** A short listing of the queue for evidence: job directories, tmp/ and ready/. */
export function listing(snapshot: QueueSnapshot, only?: ReadonlySet<string>): string[] {
  const lines: string[] = [];
  for (const job of snapshot.jobs.values()) {
    if (only !== undefined && !only.has(job.id)) continue;
    lines.push(`jobs/${job.id}${job.gated ? '.gated' : ''}/: ${job.entries.map(describeEntry).join(' ') || '(empty)'}`);
  }
  if (snapshot.strayInJobs.length > 0) lines.push(`jobs/ (not job directories): ${snapshot.strayInJobs.map(describeEntry).join(' ')}`);
  lines.push(`tmp/: ${snapshot.tmp.map(describeEntry).join(' ') || '(empty)'}`);
  lines.push(`ready/: ${snapshot.ready.map((e) => e.name).join(' ') || '(empty)'}`);
  return lines;
}

function findingText(findings: readonly Finding[]): string {
  const first = findings[0];
  return first === undefined ? 'invalid' : `${first.code} (${first.clause}): ${first.message}`;
}

export interface InvariantInput {
  /** Ids a producer reported as accepted. */
  accepted?: readonly string[];
  /** Starts per job id, counted from the commands' own log outside the queue. */
  starts?: ReadonlyMap<string, number>;
  /** Whether every job must be finished (after recovery and a drain). */
  requireReceipts?: boolean;
  /** Jobs that stay unfinished by design (a live foreign owner's claim): no receipt is owed for them. */
  unfinished?: ReadonlySet<string>;
  /** Clauses to cite for an invalid record (PUB-3 after a crash: a torn record became visible). */
  invalidClauses?: string[];
  /** Jobs whose stdin a case damaged on purpose (EXEC-7): not an I1 failure of the implementation. */
  damagedStdin?: ReadonlySet<string>;
  /**
   * A state a power loss left (cases/power.ts): a record of generation g
   * without claim g (or a gap in the claims) means claim g was not durable
   * before what depended on it (PUB-5, named first); output files of a
   * generation whose claim was lost are data files a power loss may leave
   * (DUR-5) and recovery must cope with, not a broken invariant.
   */
  powerLoss?: boolean;
}

/** Checks I1 to I4 and the record layer on a snapshot; returns failures (empty when all hold). */
export async function checkInvariants(snapshot: QueueSnapshot, input: InvariantInput = {}): Promise<Failure[]> {
  const failures: Failure[] = [];
  const fail = (clauses: string[], message: string, jobId?: string): void => {
    failures.push({ clauses, message, evidence: listing(snapshot, jobId === undefined ? undefined : new Set([jobId])) });
  };
  for (const bad of snapshot.invalid) {
    const clauses = [...(input.invalidClauses ?? []), ...new Set(bad.findings.map((f) => f.clause))];
    failures.push({ clauses: [...new Set(clauses)], message: `invalid record ${bad.path}: ${findingText(bad.findings)}`, evidence: listing(snapshot, jobOfPath(bad.path)) });
  }
  for (const stray of snapshot.strayInJobs) {
    fail(['ENQ-3', 'LAYOUT-4', 'I1'], `jobs/${stray.name} is not a job directory (${stray.kind})`);
  }
  for (const id of input.accepted ?? []) {
    if (!snapshot.jobs.has(id)) fail(['ENQ-4', 'I1'], `job ${id} was reported accepted but jobs/${id} does not exist`);
  }
  for (const job of snapshot.jobs.values()) {
    // I1: complete.
    if (job.spec === undefined) {
      const why = job.entries.some((e) => e.name === 'spec.json') ? findingText(job.specFindings) : 'spec.json is missing';
      fail(['ENQ-5', 'ENQ-3', 'I1'], `job ${job.id} is visible in jobs/ without a complete valid spec: ${why}`, job.id);
    } else if (job.spec.stdin !== null && input.damagedStdin?.has(job.id) !== true) {
      const stdin = job.entries.find((e) => e.name === 'stdin');
      if (stdin === undefined || stdin.kind !== 'file') {
        fail(['ENQ-5', 'I1'], `job ${job.id}: spec.stdin is not null but there is no regular stdin file`, job.id);
      } else {
        const bytes = await readFile(path.join(job.dir, 'stdin'));
        if (bytes.length !== job.spec.stdin.bytes || sha256(bytes) !== job.spec.stdin.sha256) {
          fail(['ENQ-5', 'I1'], `job ${job.id}: stdin is ${bytes.length} bytes with sha256 ${sha256(bytes)}, the spec says ${job.spec.stdin.bytes} bytes ${job.spec.stdin.sha256}`, job.id);
        }
      }
    }
    // I2: generations.
    const top = job.claims.at(-1) ?? 0;
    for (let g = 1; g <= top; g++) {
      if (!job.claims.includes(g)) fail([...(input.powerLoss === true ? ['PUB-5'] : []), 'CLAIM-5', 'I2'], `job ${job.id}: claim generations ${job.claims.join(',')} skip ${g}`, job.id);
    }
    for (const [kind, gens] of [['exec', job.execs], ['end', job.ends], ['state', job.states], ['stdout', job.stdouts], ['stderr', job.stderrs]] as const) {
      if (input.powerLoss === true && (kind === 'stdout' || kind === 'stderr')) continue;
      for (const g of gens) {
        if (!job.claims.includes(g)) fail([...(input.powerLoss === true ? ['PUB-5'] : []), 'CLAIM-5', 'CLAIM-7', 'I2'], `job ${job.id}: ${kind} of generation ${g} exists without claim.${g}.json`, job.id);
      }
    }
    if (job.spec !== undefined && input.starts !== undefined) {
      const started = input.starts.get(job.id) ?? 0;
      if (started > job.spec.max_attempts) {
        fail(['RETRY-2', 'I2'], `job ${job.id} (max_attempts ${job.spec.max_attempts}) was started ${started} times`, job.id);
      }
    }
    if (job.spec !== undefined && job.execs.length > 0) {
      // Every recorded execution counts unless an end says otherwise; more executions than attempts is a breach.
      let counted = 0;
      for (const g of job.execs) {
        if (!job.ends.includes(g)) {
          counted += 1;
          continue;
        }
        const end = await readRecord(path.join(job.dir, `end.${g}.json`), 'end', { expectedJobId: job.id, expectedGen: g });
        if (!end.ok || end.value.counted) counted += 1;
      }
      if (counted > job.spec.max_attempts) fail(['RETRY-2', 'I2'], `job ${job.id} recorded ${counted} counted executions, max_attempts is ${job.spec.max_attempts}`, job.id);
    }
    // GATE-2: nothing claims a gated job.
    if (job.gated && (job.claims.length > 0 || job.entries.some((e) => e.name === 'receipt.json'))) {
      fail(['GATE-2', 'I2'], `job ${job.id} is gated (jobs/${job.id}.gated) yet holds claims ${job.claims.join(',') || 'none'}${job.entries.some((e) => e.name === 'receipt.json') ? ' and a receipt' : ''}: a gated job is never claimed`, job.id);
    }
    failures.push(...gateFailures(snapshot, job));
    // I3: one receipt. A job held and never released, nor cancelled, waits by design (HOLD-1).
    const receiptNamed = job.entries.filter((e) => e.name === 'receipt.json');
    const held = job.gated && job.spec?.hold === true && !job.release && !job.cancel && !job.cancelForce;
    if (input.requireReceipts === true && job.spec !== undefined && receiptNamed.length === 0 && !held && input.unfinished?.has(job.id) !== true) {
      fail(['RECOV-3', 'RCPT-3', 'I3'], `job ${job.id} has no receipt after recovery and a drain`, job.id);
    }
    if (receiptNamed.length > 0 && job.receipt === undefined && job.receiptFindings.length === 0) {
      fail(['RCPT-3', 'I3'], `job ${job.id}: receipt.json is not a readable record`, job.id);
    }
    const extraReceipts = job.entries.filter((e) => /^receipt/.test(e.name) && e.name !== 'receipt.json');
    if (extraReceipts.length > 0) fail(['RCPT-3', 'LAYOUT-5', 'I3'], `job ${job.id} has other receipt-like names: ${extraReceipts.map((e) => e.name).join(' ')}`, job.id);
    // I4: outputs complete.
    if (job.receipt !== undefined) failures.push(...(await checkReceiptOutputs(snapshot, job)));
  }
  return failures;
}

function jobOfPath(rel: string): Set<string> | undefined {
  const match = /^jobs\/([^/]+)\//.exec(rel);
  const id = match?.[1] === undefined ? undefined : jobIdOfDirName(match[1]);
  return id === undefined ? undefined : new Set([id]);
}

/**
 * AFTER-3 and HOLD-1 on what a job did: one that recorded an execution was
 * run, so each of its dependencies has a receipt that satisfies it now (a
 * satisfied dependency stays so; one gone was retired, AFTER-1), and, if it
 * was enqueued held, it was released (or it would not have run).
 */
function gateFailures(snapshot: QueueSnapshot, job: JobSnapshot): Failure[] {
  if (job.spec === undefined || job.execs.length === 0) return [];
  const failures: Failure[] = [];
  const evidence = (ids: string[]): string[] => listing(snapshot, new Set([job.id, ...ids]));
  for (const dependency of job.spec.after ?? []) {
    const dep = snapshot.jobs.get(dependency.job_id);
    if (dep === undefined) continue;
    const finished = dep.entries.some((e) => e.name === 'receipt.json');
    const satisfied = finished && (dependency.when === 'finished' || dep.receipt?.outcome === 'succeeded');
    if (!satisfied) {
      const what = finished ? `finished ${dep.receipt?.outcome ?? '(unreadable receipt)'}` : 'is not finished';
      failures.push({ clauses: ['AFTER-3', 'GATE-3'], message: `job ${job.id} ran (exec records ${job.execs.join(',')}) but its dependency ${dependency.job_id} ${what}; it runs only after it ${dependency.when}`, evidence: evidence([dependency.job_id]) });
    }
  }
  if (job.spec.hold === true && !job.release) {
    failures.push({ clauses: ['HOLD-1', 'GATE-3'], message: `job ${job.id} was enqueued held and ran, but has no release.json: a held job runs only once released`, evidence: evidence([]) });
  }
  return failures;
}

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** I4 (RCPT-2, RCPT-5): the receipt's stdout/stderr summaries match the files byte for byte. */
export async function checkReceiptOutputs(snapshot: QueueSnapshot, job: JobSnapshot): Promise<Failure[]> {
  const failures: Failure[] = [];
  const receipt = job.receipt;
  if (receipt === undefined) return failures;
  for (const stream of ['stdout', 'stderr'] as const) {
    const summary = receipt[stream];
    if (summary === null) continue;
    const name = `${stream}.${summary.gen}`;
    const entry = job.entries.find((e) => e.name === name);
    const fail = (message: string): void => {
      failures.push({ clauses: ['RCPT-2', 'RCPT-5', 'I4'], message: `job ${job.id}: ${message}`, evidence: [`receipt ${stream}: ${JSON.stringify(summary)}`, ...listing(snapshot, new Set([job.id]))] });
    };
    if (entry === undefined || entry.kind !== 'file') {
      fail(`the receipt describes ${name}, which is ${entry === undefined ? 'missing' : `a ${entry.kind}`}`);
      continue;
    }
    const bytes = await readFile(path.join(job.dir, name));
    if (bytes.length !== summary.bytes_kept) fail(`${name} is ${bytes.length} bytes, the receipt says bytes_kept ${summary.bytes_kept}`);
    else if (sha256(bytes) !== summary.sha256) fail(`${name} has sha256 ${sha256(bytes)}, the receipt says ${summary.sha256}`);
    if (summary.bytes_total !== null) {
      if (summary.bytes_total < summary.bytes_kept) fail(`${stream}.bytes_total ${summary.bytes_total} < bytes_kept ${summary.bytes_kept}`);
      if (summary.truncated !== summary.bytes_total > summary.bytes_kept) fail(`${stream}.truncated is ${summary.truncated} but bytes_total ${summary.bytes_total}, bytes_kept ${summary.bytes_kept}`);
    }
    if (job.spec !== undefined && summary.bytes_kept > job.spec.max_output_bytes) fail(`${stream} keeps ${summary.bytes_kept} bytes, over max_output_bytes ${job.spec.max_output_bytes}`);
  }
  return failures;
}

/** The kept bytes of the output the receipt describes, or undefined. */
export async function outputOf(job: JobSnapshot | undefined, stream: 'stdout' | 'stderr'): Promise<string | undefined> {
  const gen = job?.receipt?.[stream]?.gen;
  if (job === undefined || gen === undefined) return undefined;
  return readFile(path.join(job.dir, `${stream}.${gen}`), 'utf8').catch(() => undefined);
}
