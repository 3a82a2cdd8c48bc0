/**
 * `fsjob validate QUEUE`: the whole-queue audit of CONF-3. One pass over the
 * queue reports every violation the disk shows, each as a finding with its
 * path, job, clause and severity (src/records/findings.ts):
 *
 *   1. the root: SEC-1 (else the audit cannot run), fsjob.json (LAYOUT-2,
 *      VER-1), the six directories and nothing else (LAYOUT-1);
 *   2. every job directory (src/validator/job-scan.ts);
 *   3. ready/, dedupe/, lanes/, workers/ and tmp/ against the jobs: the
 *      index (READY-1, READY-3, LAYOUT-7), dedupe keys (DEDUPE-1, DEDUPE-2),
 *      lanes (LANE-1, LANE-2), holds of missing jobs, stale workers;
 *   4. liveness of every open claim (ID-6..ID-8, RECOV-1), each owner
 *      judged once.
 *
 * It never writes: no file is created, changed, removed or re-moded, nothing
 * is opened for writing, no link is followed, and only entries a listing
 * reported as regular files are ever opened (read-only, non-blocking,
 * bounded, with O_NOATIME where permitted).
 */
// Many records are checked here: with ajv's compiled code (src/records/compiled.ts).
import '../records/compiled.ts';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { FsjobError } from '../base/errors.ts';
import type { Finding } from '../records/findings.ts';
import type { IdentityOptions } from '../model/identity.ts';
import { onDifferentMounts } from './mounts.ts';
import { finishedSince, jobPresentNow, readyEntryPresentNow } from './doubt.ts';
import { PAUSE_RECORD, QUEUE_DIRS, QUEUE_RECORD, isJobId, parseReadyEntry, readyEntryName } from '../model/layout.ts';
import type { QueueRecord } from '../records/codec.ts';
import { checkQueueRoot, listDirSync, lstatIfExistsSync, type DirEntry } from '../fs/safefs.ts';
import { TEMP_MAX_AGE } from '../base/constants.ts';
import { type AuditEnv, Sink, auditEnv, checkKind, checkTemp, readRecordEntry, reportUnreadable, statEntry } from './entries.ts';
import { type JobScan, type JobSummary, scanJob } from './job-scan.ts';
import { checkDedupe, checkLanes, type Hold, type HoldIndex, type KeyCheckContext } from './keys.ts';
import { ScanPool, scanWorkerEntry } from './scan-pool.ts';
import { LivenessJudge } from './liveness.ts';
import { checkOpenClaims } from './open-claims.ts';
import { KEY_HASH_PATTERN, jobIdOfDirName, parseHoldNumber } from '../records/names.ts';
import { checkGates } from './gates.ts';
import { checkRegistrations } from './registrations.ts';

/** Options of `auditQueue`. */
export interface QueueAuditOptions {
  /** Milliseconds since the epoch; injectable for tests. */
  now?: () => number;
  /** Seams for the process table (tests). */
  identity?: IdentityOptions;
  /** Called with (jobs checked, jobs in all) at most every progressIntervalMs while jobs are scanned. */
  progress?: (checked: number, total: number) => void;
  progressIntervalMs?: number;
  /** Threads scanning job directories, the main thread one of them; default: one per CPU (at most 4) from PARALLEL_MIN_JOBS jobs on, else 1. */
  threads?: number;
  /** False: the main thread leaves every job to `threads` worker threads (tests, which need the workers to scan). @default true */
  mainThreadScans?: boolean;
  /** Jobs per batch a scan thread is handed (tests make it small to have many batches in flight). @default 256 */
  threadBatch?: number;
}

/** Below this many jobs, starting worker threads costs more than it saves. */
export const PARALLEL_MIN_JOBS = 20_000;
const MAX_THREADS = 4;
/**
 * The fewest bytes of directory size an entry of jobs/ adds (tmpfs counts 20
 * per entry; ext4, xfs and btrfs more): a jobs/ smaller than
 * PARALLEL_MIN_JOBS of them holds too few jobs to start worker threads
 * before it is listed. A bigger one may hold fewer (a directory does not
 * shrink): then the threads, already started, still share the scan.
 */
const DIR_BYTES_PER_ENTRY_MIN = 20;

/** What `auditQueue` found in one queue. */
export interface QueueAudit {
  /** The queue root as given. */
  target: string;
  /** Queue-wide findings first, then each job's, jobs in id order. */
  findings: Finding[];
  files: number;
  jobs: number;
}

/** Whether `dir` holds an entry named fsjob.json (of any kind, unopened): `fsjob validate DIR` then audits it as a queue. */
export function holdsQueueRecord(dir: string): boolean {
  return lstatIfExistsSync(join(dir, QUEUE_RECORD)) !== undefined;
}

/**
 * Audit the queue at `target`. Throws NOT_A_QUEUE (no such directory, no
 * fsjob.json) or UNSAFE_QUEUE (SEC-1) when it cannot run; everything else is
 * a finding.
 */
export async function auditQueue(target: string, options: QueueAuditOptions = {}): Promise<QueueAudit> {
  const now = options.now ?? Date.now;
  const root = resolve(target);
  await checkQueueRoot(root); // SEC-1: a root we may not trust is not audited at all
  const env: AuditEnv = auditEnv(target, root, process.geteuid?.() ?? 0, now());
  const audit = new QueueAuditRun(env, options);
  return audit.run();
}

/** Scanning threads by default for a big queue: one per CPU, at most MAX_THREADS. */
function defaultThreads(): number {
  return Math.min(availableParallelism(), MAX_THREADS);
}

class QueueAuditRun {
  private readonly queueSink = new Sink();
  private readonly jobSinks = new Map<string, Sink>();
  private readonly summaries = new Map<string, JobSummary>();
  private readonly liveness: LivenessJudge;
  private readonly readyByJob = new Map<string, { name: string; priority: number }[]>();
  private readonly staging = new Set<string>();
  private jobsExamined = 0;
  private scannedFiles = 0;
  private dirs = new Map<string, DirEntry>();
  /** Queue directories the filesystem refused to list (ENTRY_UNREADABLE): no check judges by their missing contents. */
  private readonly unlisted = new Set<string>();
  /** The size of jobs/ as lstat gave it: how many jobs it may hold, before it is listed. */
  private jobsDirBytes = 0;

  constructor(
    private readonly env: AuditEnv,
    private readonly options: QueueAuditOptions,
  ) {
    this.liveness = new LivenessJudge(options.identity);
  }

  private abs(...parts: string[]): string {
    return join(this.env.root, ...parts);
  }

  private shown(...parts: string[]): string {
    return join(this.env.shownRoot, ...parts);
  }

  private keyContext(): KeyCheckContext {
    return { root: this.env.root, summaries: this.summaries, jobSink: (id) => this.jobSink(id), shown: (...parts) => this.shown(...parts) };
  }

  private jobSink(id: string): Sink {
    let sink = this.jobSinks.get(id);
    if (sink === undefined) {
      sink = new Sink();
      this.jobSinks.set(id, sink);
    }
    return sink;
  }

  async run(): Promise<QueueAudit> {
    const rootEntries = listDirSync(this.env.root);
    const queueEntry = rootEntries.find((entry) => entry.name === 'fsjob.json');
    if (queueEntry === undefined) {
      throw new FsjobError('NOT_A_QUEUE', `${this.env.shownRoot} is not an fsjob queue: it has no fsjob.json`, { path: this.env.shownRoot, clause: 'LAYOUT-2' });
    }
    if (!this.checkQueueRecord(queueEntry)) return this.result();
    this.checkRoot(rootEntries);
    // Worker threads load while jobs/ is listed.
    const early = this.jobsDirBytes >= PARALLEL_MIN_JOBS * DIR_BYTES_PER_ENTRY_MIN ? this.startPool(this.options.threads ?? defaultThreads()) : this.options.threads === undefined ? undefined : this.startPool(this.options.threads);
    try {
      await this.scanJobs(this.listJobs(), early);
    } finally {
      await early?.close();
    }
    this.checkTmp();
    this.checkReady();
    const dedupe = this.readHolds('dedupe');
    const lanes = this.readHolds('lanes');
    const running = await checkOpenClaims(this.summaries, this.liveness, this.env.nowMs, (id) => this.jobSink(id));
    // What a refused directory holds is unknown: its absence is no evidence (no READY_MISSING for an unlisted ready/).
    if (!this.unlisted.has('ready')) this.checkIndex();
    if (!this.unlisted.has('dedupe')) checkDedupe(this.keyContext(), dedupe);
    if (!this.unlisted.has('lanes')) checkLanes(this.keyContext(), lanes, running);
    checkGates(this.keyContext());
    await checkRegistrations(this.queueSink, this.env, this.list('workers') ?? [], this.abs('workers'), this.shown('workers'), this.liveness);
    return this.result();
  }

  private result(): QueueAudit {
    const findings = [...this.queueSink.findings];
    let files = this.queueSink.files + this.scannedFiles;
    for (const id of [...this.jobSinks.keys()].sort()) {
      const sink = this.jobSinks.get(id) as Sink;
      findings.push(...sink.findings);
      files += sink.files;
    }
    return { target: this.env.shownRoot, findings, files, jobs: this.jobsExamined };
  }

  /** LAYOUT-2 and VER-1. False when the queue is of another major: nothing inside is judged by rules it does not follow. */
  private checkQueueRecord(entry: DirEntry): boolean {
    const sink = this.queueSink;
    const shown = this.shown('fsjob.json');
    const before = sink.findings.length;
    const read = readRecordEntry<'queue'>(sink, this.env, this.abs('fsjob.json'), shown, entry, 'queue', {}, null);
    const value: QueueRecord | undefined = read.value;
    if (value !== undefined) return true;
    const problems = sink.findings.slice(before);
    if (problems.some((finding) => finding.code === 'RECORD_VERSION')) {
      sink.add('QUEUE_VERSION', `${shown} does not name protocol major 1, so the queue is refused as a whole`, shown, null);
      return false;
    }
    sink.add('QUEUE_RECORD_INVALID', `${shown} is not a valid queue record, so the directory is not a queue to a reader`, shown, null);
    return true;
  }

  /** LAYOUT-1: exactly fsjob.json, the six directories and, while paused, pause.json (temporary names aside). */
  private checkRoot(entries: readonly DirEntry[]): void {
    const sink = this.queueSink;
    const expected = new Set<string>(QUEUE_DIRS);
    const devices = new Map<string, number>();
    for (const entry of entries) {
      const shown = this.shown(entry.name);
      if (entry.name === 'fsjob.json') continue;
      if (entry.name === PAUSE_RECORD) {
        // PAUSE-1 (1.1): the queue is paused; the record is checked like any other (an invalid one still pauses).
        readRecordEntry<'pause'>(sink, this.env, this.abs(entry.name), shown, entry, 'pause', {}, null);
        continue;
      }
      if (entry.name.startsWith('.')) {
        checkTemp(sink, this.env, this.abs(entry.name), shown, entry.kind, null);
        continue;
      }
      if (!expected.has(entry.name)) {
        sink.add('ROOT_UNKNOWN_ENTRY', `${shown} is not one of the entries LAYOUT-1 lists`, shown, null);
        if (checkKind(sink, shown, entry.kind, 'any', null)) statEntry(sink, this.env, this.abs(entry.name), shown, null);
        continue;
      }
      if (checkKind(sink, shown, entry.kind, 'dir', null)) {
        const stats = statEntry(sink, this.env, this.abs(entry.name), shown, null);
        if (stats !== undefined) devices.set(entry.name, stats.dev);
        if (stats !== undefined && entry.name === 'jobs') this.jobsDirBytes = stats.size;
        this.dirs.set(entry.name, entry);
      }
    }
    // LAYOUT-3: a job is published by renaming tmp/<id> to jobs/<id>, which only one filesystem can do.
    const tmp = devices.get('tmp');
    const jobs = devices.get('jobs');
    if (tmp !== undefined && jobs !== undefined && tmp !== jobs) {
      sink.add('QUEUE_TMP_OTHER_FS', `${this.shown('tmp')} is on another filesystem than ${this.shown('jobs')} (device ${tmp}, not ${jobs}): the rename that publishes a job cannot cross it`, this.shown('tmp'), null);
    } else if (tmp !== undefined && jobs !== undefined && onDifferentMounts(this.abs('tmp'), this.abs('jobs')) === true) {
      sink.add('QUEUE_TMP_OTHER_FS', `${this.shown('tmp')} and ${this.shown('jobs')} are on one filesystem but two mounts (a bind mount?): the rename that publishes a job cannot cross them`, this.shown('tmp'), null);
    }
    for (const name of QUEUE_DIRS) {
      if (!entries.some((entry) => entry.name === name)) {
        const shown = this.shown(name);
        sink.add('QUEUE_DIR_MISSING', `${shown} does not exist`, shown, null);
      }
    }
  }

  /** A queue directory to walk, or undefined when it is missing or not a directory (reported by checkRoot). */
  private list(name: string): DirEntry[] | undefined {
    if (!this.dirs.has(name)) return undefined;
    try {
      return listDirSync(this.abs(name));
    } catch (error) {
      if (error instanceof FsjobError && error.code === 'NOT_FOUND') return undefined;
      // CONF-3 (I8): reported, and the audit goes on with the other directories.
      if (!reportUnreadable(this.queueSink, error, this.shown(name), null)) throw error;
      this.unlisted.add(name);
      return undefined;
    }
  }

  /** Whether jobs/ or tmp/ was refused: then a job missing from the audit may well exist (no READY_NO_JOB, no HOLD_JOB_MISSING). */
  private jobsUnknown(): boolean {
    return this.unlisted.has('jobs') || this.unlisted.has('tmp');
  }

  /** jobs/: directories named by a job id, or by one and `.gated` (GATE-1); everything else reported (LAYOUT-4, SEC-2, SEC-3, TEMP-1). */
  private listJobs(): string[] {
    const sink = this.queueSink;
    const names: string[] = [];
    for (const entry of this.list('jobs') ?? []) {
      // The common case first, with nothing made for it: 100,000 jobs, 100,000 directories.
      if (entry.kind === 'dir' && isJobId(entry.name)) {
        names.push(entry.name);
        continue;
      }
      const shown = this.shown('jobs', entry.name);
      const id = jobIdOfDirName(entry.name);
      if (entry.name.startsWith('.')) {
        checkTemp(sink, this.env, this.abs('jobs', entry.name), shown, entry.kind, null);
      } else if (id === undefined) {
        sink.add('JOB_BAD_ID', `${shown} is not a job id (19 digits, "-", 16 lowercase hex digits)`, shown, null);
        if (checkKind(sink, shown, entry.kind, 'any', null)) statEntry(sink, this.env, this.abs('jobs', entry.name), shown, null);
      } else if (checkKind(this.jobSink(id), shown, entry.kind, 'dir', id)) {
        names.push(entry.name); // jobs/<id>.gated (GATE-1): a plain id's directory was taken above
      }
    }
    return names;
  }

  /** Worker threads for `threads` scanning threads in all (the main thread one of them unless mainThreadScans is false), or undefined for none. */
  private startPool(threads: number): ScanPool | undefined {
    const workers = this.options.mainThreadScans === false ? threads : threads - 1;
    const entry = threads > 1 && workers > 0 ? scanWorkerEntry() : undefined;
    return entry === undefined ? undefined : new ScanPool(entry, this.env, workers);
  }

  /** Scans the job directories `ids` (names in jobs/: an id, or an id and `.gated`), with the threads of `pool` when there is one. */
  private async scanJobs(ids: readonly string[], early: ScanPool | undefined): Promise<void> {
    const progress = this.progressTicker(ids.length);
    const pool = early ?? (this.options.threads === undefined && ids.length >= PARALLEL_MIN_JOBS ? this.startPool(defaultThreads()) : undefined);
    if (pool === undefined || ids.length === 0) {
      for (const [index, id] of ids.entries()) {
        this.record(jobIdOfDirName(id) ?? id, scanJob(this.env, id));
        if ((index & 63) === 63) progress(index + 1);
      }
    } else {
      await pool.scan(ids, {
        local: this.options.mainThreadScans === false ? undefined : (name) => scanJob(this.env, name),
        take: (index, scan) => this.record(jobIdOfDirName(ids[index] as string) ?? (ids[index] as string), scan),
        progress,
        batch: this.options.threadBatch,
      });
    }
    if (ids.length > 0) progress(ids.length, true);
  }

  private record(id: string, scan: JobScan | undefined | null): void {
    if (scan === undefined || scan === null) return; // vanished since the listing (collected meanwhile)
    this.jobsExamined += 1;
    this.scannedFiles += scan.findings.files;
    // A clean job costs no sink: 100,000 finished jobs keep only their summaries.
    if (scan.findings.list.length > 0) this.jobSink(id).findings.push(...scan.findings.list);
    this.summaries.set(id, scan.summary);
  }

  /** Reports (checked, total) at most every progressIntervalMs, and at the end when it reported before: short audits stay silent. */
  private progressTicker(total: number): (checked: number, final?: boolean) => void {
    const { progress } = this.options;
    if (progress === undefined) return () => undefined;
    const interval = this.options.progressIntervalMs ?? 2000;
    let last = Date.now();
    let reported = false;
    return (checked, final = false) => {
      const time = Date.now();
      if (final ? reported : time - last >= interval) {
        last = time;
        reported = true;
        progress(checked, total);
      }
    };
  }

  /** tmp/: staging directories are private to their producer (ENQ-5): only their age and hazards are judged (TEMP-1). */
  private checkTmp(): void {
    for (const entry of this.list('tmp') ?? []) {
      if (isJobId(entry.name) && entry.kind === 'dir') this.staging.add(entry.name);
      checkTemp(this.queueSink, this.env, this.abs('tmp', entry.name), this.shown('tmp', entry.name), entry.kind, null);
    }
  }

  /** ready/: names (LAYOUT-7), empty regular files, entries of missing jobs (READY-3). */
  private checkReady(): void {
    const sink = this.queueSink;
    for (const entry of this.list('ready') ?? []) {
      const path = this.abs('ready', entry.name);
      const shown = this.shown('ready', entry.name);
      if (entry.name.startsWith('.')) {
        checkTemp(sink, this.env, path, shown, entry.kind, null);
        continue;
      }
      const parsed = parseReadyEntry(entry.name);
      if (parsed === undefined) {
        sink.add('READY_BAD_NAME', `${shown} is not named <P>-<id> (P = 1000 - priority in four digits)`, shown, null);
        if (checkKind(sink, shown, entry.kind, 'any', null)) statEntry(sink, this.env, path, shown, null);
        continue;
      }
      const jobSink = this.summaries.has(parsed.id) ? this.jobSink(parsed.id) : sink;
      const jobId = this.summaries.has(parsed.id) ? parsed.id : null;
      if (!checkKind(jobSink, shown, entry.kind, 'file', jobId)) continue;
      const stats = statEntry(jobSink, this.env, path, shown, jobId);
      if (stats === undefined) continue;
      if (stats.size > 0) jobSink.add('READY_NOT_EMPTY', `${shown} holds ${stats.size} bytes`, shown, jobId);
      const list = this.readyByJob.get(parsed.id) ?? [];
      list.push({ name: entry.name, priority: parsed.priority });
      this.readyByJob.set(parsed.id, list);
      if (jobId === null) {
        const age = this.env.nowMs - stats.mtimeMs;
        // A producer may be between ENQ-2 and ENQ-3: young entries are in progress.
        if (age > TEMP_MAX_AGE && !this.staging.has(parsed.id) && !this.jobsUnknown()) {
          sink.add('READY_NO_JOB', `${shown} names job ${parsed.id}, which has no directory in jobs/`, shown, null);
        }
      }
    }
  }

  /** READY-1 and LAYOUT-7 against each job: an unfinished job has an entry at its priority; a finished one needs none. */
  private checkIndex(): void {
    for (const [id, summary] of this.summaries) {
      if (summary.unreadable === true) continue;
      const entries = this.readyByJob.get(id);
      if (summary.finished) {
        // The common case of a big queue, with nothing made for it: a finished job that nothing indexes.
        if (entries === undefined) continue;
        for (const entry of entries) {
          // Doubt (doubt.ts): the owner removes the entry after the receipt (READY-2), maybe since the listing.
          if (!readyEntryPresentNow(this.env.root, entry.name)) continue;
          const shown = this.shown('ready', entry.name);
          this.jobSink(id).add('READY_FINISHED', `${shown} indexes job ${id}, which is finished`, shown, id);
        }
        continue;
      }
      if (entries === undefined || entries.length === 0) {
        if (finishedSince(this.env.root, summary)) continue; // its receipt came after the scan, the entry's removal before the listing
        const shown = this.shown('ready', summary.spec === undefined ? `*-${id}` : readyEntryName(summary.spec.priority, id));
        this.jobSink(id).add('READY_MISSING', `job ${id} is unfinished but ready/ has no entry for it`, shown, id);
        continue;
      }
      if (summary.spec === undefined) continue;
      for (const entry of entries) {
        if (entry.priority !== summary.spec.priority) {
          const shown = this.shown('ready', entry.name);
          this.jobSink(id).add('READY_PRIORITY', `${shown} encodes priority ${entry.priority} but spec.json says ${summary.spec.priority} (entry ${readyEntryName(summary.spec.priority, id)})`, shown, id);
        }
      }
    }
  }

  /** dedupe/<h>/<n>.json or lanes/<h>/<n>.json: names (LAYOUT-8), records (REC-4, REC-7), the highest hold per key. */
  private readHolds(dir: 'dedupe' | 'lanes'): HoldIndex {
    const sink = this.queueSink;
    const index: HoldIndex = new Map();
    const kind = dir === 'dedupe' ? 'dedupe' : 'lane';
    for (const keyEntry of this.list(dir) ?? []) {
      const keyPath = this.abs(dir, keyEntry.name);
      const keyShown = this.shown(dir, keyEntry.name);
      if (keyEntry.name.startsWith('.')) {
        checkTemp(sink, this.env, keyPath, keyShown, keyEntry.kind, null);
        continue;
      }
      if (!KEY_HASH_PATTERN.test(keyEntry.name)) {
        sink.add('HOLD_BAD_NAME', `${keyShown} is not a key digest (64 lowercase hex digits)`, keyShown, null);
        if (checkKind(sink, keyShown, keyEntry.kind, 'any', null)) statEntry(sink, this.env, keyPath, keyShown, null);
        continue;
      }
      if (!checkKind(sink, keyShown, keyEntry.kind, 'dir', null)) continue;
      if (statEntry(sink, this.env, keyPath, keyShown, null) === undefined) continue;
      let holds: DirEntry[];
      try {
        holds = listDirSync(keyPath);
      } catch (error) {
        if (error instanceof FsjobError && error.code === 'NOT_FOUND') continue;
        throw error;
      }
      let top: Hold | undefined;
      for (const hold of holds) {
        const path = join(keyPath, hold.name);
        const shown = join(keyShown, hold.name);
        if (hold.name.startsWith('.')) {
          checkTemp(sink, this.env, path, shown, hold.kind, null);
          continue;
        }
        const n = hold.name.endsWith('.json') ? parseHoldNumber(hold.name.slice(0, -'.json'.length)) : undefined;
        if (n === undefined) {
          sink.add('HOLD_BAD_NAME', `${shown} is not named <n>.json`, shown, null);
          if (checkKind(sink, shown, hold.kind, 'any', null)) statEntry(sink, this.env, path, shown, null);
          continue;
        }
        const read = readRecordEntry(sink, this.env, path, shown, hold, 'hold', { expectedKind: kind, expectedKeyHash: keyEntry.name }, null);
        if (top === undefined || n > top.n) top = { n, record: read.value, path: shown };
      }
      if (top !== undefined) index.set(keyEntry.name, top);
    }
    for (const hold of index.values()) {
      const record = hold.record;
      if (record === undefined) continue;
      // The highest hold is never removed (LANE-3), so it outlives a collected job; a job being staged (DEDUPE-3) is not missing.
      const known = this.summaries.has(record.job_id) || this.jobSinks.has(record.job_id) || this.staging.has(record.job_id);
      // Doubt (doubt.ts): a job enqueued after jobs/ and tmp/ were listed has its hold already.
      if (!known && !this.jobsUnknown() && !jobPresentNow(this.env.root, record.job_id)) {
        sink.add('HOLD_JOB_MISSING', `${hold.path} is the highest hold of its key and names job ${record.job_id}, which does not exist`, hold.path, null);
      }
    }
    return index;
  }
}

