/**
 * One job directory, examined in one pass (synchronously, so that a queue of
 * 100,000 jobs is not 2.6 million thread-pool round trips): every entry's
 * kind, owner and mode, every record against REC-4, the data files against
 * what the records say, and the records of the job against each other
 * (spec/claim.md, spec/running.md, spec/control.md). What needs other jobs or the process table (the ready
 * index, dedupe keys, lanes, owner liveness) is left in the summary for
 * src/validator/queue.ts.
 *
 * Nothing is written; only names the listing reported as regular files are
 * opened, read-only and bounded (SEC-2..SEC-4).
 */
import { isFsjobError } from '../base/errors.ts';
import { classifyJob, renewedAt, type GenEntries } from '../model/job.ts';
import { genRecordName } from '../model/layout.ts';
import { checkGatedEntries, checkGateSpec, gateOf } from './job-gate.ts';
import type { JobSummary, OpenClaim } from './job-summary.ts';
import type { ClaimRecord, EndRecord, ExecRecord, Group, OutputSummary, ReceiptRecord, SpecRecord, StateRecord } from '../records/codec.ts';
import { GATED_SUFFIX, jobIdOfDirName } from '../records/names.ts';
import { type DirEntry, listDirSync, lstatIfExistsSync } from '../fs/safefs.ts';
import { GEN_MAX, OUTPUT_MAX, STDIN_MAX } from '../base/constants.ts';
import { type AuditEnv, Sink, checkKind, checkStats, checkTemp, readRecordEntry, reportUnreadable } from './entries.ts';
import { hashDataFile, statDataFile, type DataFile } from './data-file.ts';

type Stream = 'stdout' | 'stderr';

export type { JobSummary, OpenClaim } from './job-summary.ts';

export interface JobScan {
  summary: JobSummary;
  findings: JobScanFindings;
}

export interface JobScanFindings {
  list: Sink['findings'];
  files: number;
}

interface GenRecords {
  claim?: ClaimRecord;
  exec?: ExecRecord;
  state?: StateRecord;
  end?: EndRecord;
}


const STREAMS = ['stdout', 'stderr'] as const;
const GEN_RECORDS = ['claim', 'exec', 'state', 'end'] as const;
const GEN_FILES_BUT_CLAIM = ['exec', 'state', 'end', 'stdout', 'stderr'] as const;

// Module-level, not closures: a job scan runs 100,000 times in an audit, and every
// function expression created per call costs an allocation and (under tsx) a name.
function byNumber(a: number, b: number): number {
  return a - b;
}

/** The scan of a job whose directory could not be examined: what was found, and a summary the queue-wide checks skip. */
function unreadableScan(id: string, sink: Sink): JobScan {
  return { summary: { id, finished: false, unreadable: true }, findings: { list: sink.findings, files: sink.files } };
}

/**
 * Scan jobs/<name>/, a job directory the caller saw listed: `<id>`, or
 * `<id>.gated` for a gated job (GATE-1). Returns undefined if it vanished.
 * An IO refusal (EACCES, EIO) is a finding (ENTRY_UNREADABLE), never a throw.
 */
export function scanJob(env: AuditEnv, name: string): JobScan | undefined {
  const id = jobIdOfDirName(name) ?? name;
  // Names below are checked single components (a valid id, names from a listing): concatenation is join.
  const dir = `${env.jobsDir}/${name}`;
  const shownDir = `${env.shownJobsDir}/${name}`;
  const sink = new Sink();
  try {
    const dirStats = lstatIfExistsSync(dir);
    if (dirStats === undefined) return undefined;
    sink.files += 1;
    if (!dirStats.isDirectory()) {
      // Swapped for a link or a file since jobs/ was listed: report it, never list through it.
      checkKind(sink, shownDir, dirStats.isSymbolicLink() ? 'symlink' : 'other', 'dir', id);
      return unreadableScan(id, sink);
    }
    checkStats(sink, env, shownDir, dirStats, id);
    let entries: DirEntry[];
    try {
      entries = listDirSync(dir);
    } catch (error) {
      if (isFsjobError(error, 'NOT_FOUND')) return undefined; // removed by gc meanwhile
      throw error;
    }
    const job = new JobAudit(env, sink, id, dir, shownDir, name.endsWith(GATED_SUFFIX));
    const summary = job.run(entries);
    return { summary, findings: { list: sink.findings, files: sink.files } };
  } catch (error) {
    // CONF-3 (I8): a job the filesystem will not show (mode 0000: EACCES; EIO) is reported and the audit goes on with
    // the other jobs. Records are read one by one (entries.ts) and refused alone; what refuses here is the directory,
    // or an lstat inside it (a directory without x), so the job is judged no further: its summary says unreadable.
    const at = isFsjobError(error) && error.path?.startsWith(`${dir}/`) === true ? `${shownDir}${error.path.slice(dir.length)}` : shownDir;
    if (!reportUnreadable(sink, error, at, id)) throw error;
    return unreadableScan(id, sink);
  }
}

class JobAudit {
  private gens: ReadonlyMap<number, Readonly<GenEntries>> = new Map();
  private readonly records = new Map<number, GenRecords>();
  private readonly outputs = { stdout: new Map<number, DataFile>(), stderr: new Map<number, DataFile>() };
  private specEntry: DirEntry | undefined;
  private stdinEntry: DirEntry | undefined;
  private receiptEntry: DirEntry | undefined;
  private cancelEntry: DirEntry | undefined;
  private cancelForceEntry: DirEntry | undefined;
  private releaseEntry: DirEntry | undefined;
  private spec: SpecRecord | undefined;
  private receipt: ReceiptRecord | undefined;
  private order: number[] | undefined;

  constructor(
    private readonly env: AuditEnv,
    private readonly sink: Sink,
    private readonly id: string,
    private readonly dir: string,
    private readonly shownDir: string,
    private readonly gated: boolean,
  ) {}

  private path(name: string): string {
    return `${this.dir}/${name}`;
  }

  private shown(name: string): string {
    return `${this.shownDir}/${name}`;
  }

  private recordsOf(gen: number): GenRecords {
    let records = this.records.get(gen);
    if (records === undefined) {
      records = {};
      this.records.set(gen, records);
    }
    return records;
  }

  /** The generations named in the directory, ascending (computed once: every pass below walks them in order). */
  private genOrder(): number[] {
    this.order ??= [...this.gens.keys()].sort(byNumber);
    return this.order;
  }

  run(entries: readonly DirEntry[]): JobSummary {
    this.classify(entries);
    this.readRecords();
    this.checkStdin();
    this.checkOutputs();
    this.crossCheck();
    return this.summary();
  }

  /** LAYOUT-5/LAYOUT-6 (model/job.ts classifyJob); temporary and unknown names are checked here, in listing order. */
  private classify(entries: readonly DirEntry[]): void {
    const listing = classifyJob(this.id, entries);
    // Temporary and unknown names are rare: a job directory with neither makes nothing for them.
    if (listing.temps.length > 0 || listing.unknown.length > 0) this.checkOddEntries(entries, new Set(listing.temps), new Set(listing.unknown));
    this.specEntry = listing.named.spec;
    this.stdinEntry = listing.named.stdin;
    this.receiptEntry = listing.named.receipt;
    this.cancelEntry = listing.named.cancel;
    this.cancelForceEntry = listing.named.cancelForce;
    this.releaseEntry = listing.named.release;
    this.gens = listing.gens;
    if (this.gated) checkGatedEntries(this.sink, this.id, entries, (name) => this.shown(name));
  }

  /** Temporary names (TEMP-1) and names LAYOUT-5 does not define, in listing order. */
  private checkOddEntries(entries: readonly DirEntry[], temps: ReadonlySet<DirEntry>, unknown: ReadonlySet<DirEntry>): void {
    for (const entry of entries) {
      if (temps.has(entry)) {
        checkTemp(this.sink, this.env, this.path(entry.name), this.shown(entry.name), entry.kind, this.id);
      } else if (unknown.has(entry)) {
        const shown = this.shown(entry.name);
        this.sink.add('JOB_UNKNOWN_ENTRY', `${shown} is not a name LAYOUT-5 defines`, shown, this.id);
        if (checkKind(this.sink, shown, entry.kind, 'any', this.id)) {
          const stats = lstatIfExistsSync(this.path(entry.name));
          if (stats !== undefined) {
            this.sink.files += 1;
            checkStats(this.sink, this.env, shown, stats, this.id);
          }
        }
      }
    }
  }

  private readJobRecord<T extends 'spec' | 'cancel' | 'receipt' | 'release'>(entry: DirEntry, type: T, expectedForce?: boolean) {
    return readRecordEntry(this.sink, this.env, this.path(entry.name), this.shown(entry.name), entry, type, { expectedJobId: this.id, expectedForce }, this.id).value;
  }

  private readRecords(): void {
    if (this.specEntry === undefined) {
      const shown = this.shown('spec.json');
      this.sink.add('JOB_NO_SPEC', `job directory ${this.shownDir} has no spec.json`, shown, this.id);
    } else {
      this.spec = this.readJobRecord(this.specEntry, 'spec');
    }
    for (const gen of this.genOrder()) {
      const slots = this.gens.get(gen) as GenEntries;
      for (const kind of GEN_RECORDS) {
        const entry = slots[kind];
        if (entry === undefined) continue;
        const read = readRecordEntry(this.sink, this.env, this.path(entry.name), this.shown(entry.name), entry, kind, { expectedJobId: this.id, expectedGen: gen }, this.id);
        if (read.value !== undefined) (this.recordsOf(gen) as Record<string, unknown>)[kind] = read.value;
      }
    }
    if (this.cancelEntry !== undefined) this.readJobRecord(this.cancelEntry, 'cancel', false);
    if (this.cancelForceEntry !== undefined) this.readJobRecord(this.cancelForceEntry, 'cancel', true);
    if (this.receiptEntry !== undefined) this.receipt = this.readJobRecord(this.receiptEntry, 'receipt');
    if (this.releaseEntry !== undefined) this.readJobRecord(this.releaseEntry, 'release');
    if (this.spec !== undefined) checkGateSpec(this.sink, this.id, this.spec, this.gated, this.shownDir);
  }

  /** EXEC-7: the stdin file exists exactly when the spec describes one, with that size and digest. */
  private checkStdin(): void {
    const entry = this.stdinEntry;
    const described = this.spec?.stdin;
    const shown = this.shown('stdin');
    if (entry === undefined) {
      if (described !== undefined && described !== null) {
        this.sink.add('STDIN_MISMATCH', `spec.json describes ${described.bytes} bytes of stdin but ${shown} does not exist`, shown, this.id);
      }
      return;
    }
    if (!checkKind(this.sink, shown, entry.kind, 'file', this.id)) return;
    if (described === undefined) {
      // No valid spec: only the file's own hazards can be judged.
      this.statData(entry.name, STDIN_MAX);
      return;
    }
    if (described === null) {
      this.statData(entry.name, STDIN_MAX);
      this.sink.add('STDIN_MISMATCH', `${shown} exists but spec.json says the job has no stdin ("stdin": null)`, shown, this.id);
      return;
    }
    const file = this.hashData(entry.name, STDIN_MAX);
    if (file === undefined) return;
    if (file.size !== described.bytes) {
      this.sink.add('STDIN_MISMATCH', `${shown} is ${file.size} bytes but spec.json says ${described.bytes}`, shown, this.id, '/stdin/bytes');
    } else if (file.sha256 !== described.sha256) {
      this.sink.add('STDIN_MISMATCH', `the SHA-256 of ${shown} is ${file.sha256 ?? '?'} but spec.json says ${described.sha256}`, shown, this.id, '/stdin/sha256');
    }
  }

  /** A data file's size (SEC-4..SEC-6 looked at), or undefined: data-file.ts. */
  private statData(name: string, bound: number): DataFile | undefined {
    return statDataFile(this.env, this.sink, this.path(name), this.shown(name), this.id, bound);
  }

  /** A data file's size and SHA-256, read bounded, or undefined: data-file.ts. */
  private hashData(name: string, bound: number): DataFile | undefined {
    return hashDataFile(this.env, this.sink, this.path(name), this.shown(name), this.id, bound);
  }

  /** The output files: their hazards, their bound (EXEC-1), and a digest when the receipt describes them (RCPT-5). */
  private checkOutputs(): void {
    const keep = this.spec?.max_output_bytes;
    for (const [gen, slots] of this.gens) {
      for (const stream of STREAMS) {
        const entry = slots[stream];
        if (entry === undefined) continue;
        const shown = this.shown(entry.name);
        if (!checkKind(this.sink, shown, entry.kind, 'file', this.id)) continue;
        // The file the receipt describes is hashed (RCPT-5); any other is only looked at.
        const described = this.receipt?.[stream]?.gen === gen;
        const file = described ? this.hashData(entry.name, OUTPUT_MAX) : this.statData(entry.name, OUTPUT_MAX);
        if (file === undefined) continue;
        this.outputs[stream].set(gen, file);
        if (keep !== undefined && file.size > keep) {
          this.sink.add('OUTPUT_OVER_BOUND', `${shown} holds ${file.size} bytes but the job keeps at most max_output_bytes = ${keep}`, shown, this.id);
        }
      }
    }
  }

  private crossCheck(): void {
    const order = this.genOrder();
    const claimGens: number[] = [];
    for (const gen of order) if (this.gens.get(gen)?.claim !== undefined) claimGens.push(gen);
    const top = claimGens.at(-1) ?? 0;

    // CLAIM-5: generations are 1..g without a gap.
    if (claimGens.length !== top) {
      const missing: number[] = [];
      for (let gen = 1; gen <= top && missing.length < 10; gen++) if (this.gens.get(gen)?.claim === undefined) missing.push(gen);
      const count = top - claimGens.length;
      const shown = this.shown(genRecordName('claim', missing[0] ?? 1));
      this.sink.add('CLAIM_GAP', `the highest claim is generation ${top} but ${count} generation${count === 1 ? ' is' : 's are'} missing (${missing.join(', ')}${count > missing.length ? ', ...' : ''})`, shown, this.id);
    }

    // LAYOUT-5: every generation record belongs to a claim of that generation.
    for (const gen of order) {
      const slots = this.gens.get(gen) as GenEntries;
      if (slots.claim !== undefined) continue;
      for (const kind of GEN_FILES_BUT_CLAIM) {
        const entry = slots[kind];
        if (entry === undefined) continue;
        const shown = this.shown(entry.name);
        this.sink.add('GEN_WITHOUT_CLAIM', `${shown} belongs to generation ${gen}, which has no claim.${gen}.json`, shown, this.id);
      }
    }

    // EXEC-1 (commands), EXEC-3/PAYLOAD-1, RETRY-1: executions, in generation order.
    let used = 0;
    let executions = 0;
    for (const gen of order) {
      const slots = this.gens.get(gen) as GenEntries;
      if (slots.exec === undefined) continue;
      executions += 1;
      const shown = this.shown(slots.exec.name);
      // A payload generation has no output files (PAYLOAD-1); one left empty by an older implementation is accepted.
      const payload = this.spec !== undefined && this.spec.argv === undefined;
      if (!payload && (slots.stdout === undefined || slots.stderr === undefined)) {
        const missing = STREAMS.filter((stream) => slots[stream] === undefined);
        this.sink.add('EXEC_NO_OUTPUT', `generation ${gen} recorded an execution but ${missing.map((stream) => `${stream}.${gen}`).join(' and ')} ${missing.length === 1 ? 'does' : 'do'} not exist`, shown, this.id);
      }
      const records = this.records.get(gen);
      const exec = records?.exec;
      if (exec !== undefined) {
        if (exec.attempt !== used + 1) {
          this.sink.add('EXEC_ATTEMPT', `exec.${gen}.json says attempt ${exec.attempt} but ${used} attempt${used === 1 ? ' was' : 's were'} used before it`, shown, this.id, '/attempt');
        }
        if (this.spec !== undefined) {
          const command = this.spec.argv !== undefined;
          if (command && exec.group === null) {
            this.sink.add('EXEC_GROUP', `exec.${gen}.json records no process group for a command job`, shown, this.id, '/group');
          } else if (!command && exec.group !== null) {
            this.sink.add('EXEC_GROUP', `exec.${gen}.json records a process group for a payload job (handler ${this.spec.handler ?? '?'})`, shown, this.id, '/group');
          }
        }
        const state = records?.state;
        if (state !== undefined && state.attempt !== null && state.attempt !== exec.attempt) {
          const stateShown = this.shown(genRecordName('state', gen));
          this.sink.add('STATE_ATTEMPT', `state.${gen}.json says attempt ${state.attempt} but exec.${gen}.json says ${exec.attempt}`, stateShown, this.id, '/attempt');
        }
      }
      // An unreadable end record counts the attempt: never undercount what may have run.
      const end = records?.end;
      if (!(end !== undefined && !end.counted)) used += 1;
    }
    for (const [gen, records] of this.records) {
      const state = records.state;
      if (state !== undefined && state.attempt !== null && this.gens.get(gen)?.exec === undefined) {
        const shown = this.shown(genRecordName('state', gen));
        this.sink.add('STATE_ATTEMPT', `state.${gen}.json says attempt ${state.attempt} but generation ${gen} recorded no execution`, shown, this.id, '/attempt');
      }
    }

    // RETRY-2 and I2.
    if (this.spec !== undefined) {
      const max = this.spec.max_attempts;
      if (max === 1 && !this.spec.preemptible && executions >= 2) {
        this.sink.add('STARTED_TWICE', `the job has max_attempts 1 but ${executions} generations recorded an execution`, this.shownDir, this.id);
      } else if (used > max) {
        this.sink.add('ATTEMPTS_EXCEEDED', `${used} attempts were used but max_attempts is ${max}`, this.shownDir, this.id);
      }
    }

    this.checkReceipt(used);

    // CLAIM-4: an unfinished job whose last possible generation ended can never run again.
    if (top >= GEN_MAX && this.receiptEntry === undefined && this.gens.get(top)?.end !== undefined) {
      const shown = this.shown(genRecordName('end', top));
      this.sink.add('CLAIM_LIMIT', `generation ${top} (GEN_MAX) ended and the job has no receipt`, shown, this.id);
    }
  }

  private checkReceipt(used: number): void {
    const receipt = this.receipt;
    if (receipt === undefined) return;
    const shown = this.shown('receipt.json');
    if (this.gens.get(receipt.gen)?.claim === undefined) {
      this.sink.add('RECEIPT_NO_CLAIM', `receipt.json names generation ${receipt.gen} but claim.${receipt.gen}.json does not exist`, shown, this.id, '/gen');
    } else if (this.gens.get(receipt.gen)?.end !== undefined) {
      this.sink.add('RECEIPT_ENDED_GEN', `generation ${receipt.gen} published both end.${receipt.gen}.json and receipt.json`, shown, this.id, '/gen');
    }
    if (receipt.attempts !== used) {
      this.sink.add('RECEIPT_ATTEMPTS', `receipt.json says ${receipt.attempts} attempts but the exec and end records count ${used}`, shown, this.id, '/attempts');
    }
    for (const stream of ['stdout', 'stderr'] as const) this.checkReceiptOutput(receipt, stream);
    // LEASE-4 (issue 28 point 4): a receipt that finished before it started shows a wall clock that went back.
    if (receipt.started_ms !== null && receipt.finished_ms < receipt.started_ms) {
      this.sink.add('RECEIPT_TIME_ORDER', `receipt.json says finished_ms ${receipt.finished_ms}, ${receipt.started_ms - receipt.finished_ms} ms before its started_ms ${receipt.started_ms}`, shown, this.id, '/finished_ms');
    }
    if (receipt.outcome === 'cancelled' && this.cancelEntry === undefined && this.cancelForceEntry === undefined) {
      this.sink.add('RECEIPT_CANCEL_UNREQUESTED', 'the receipt says cancelled but the job has no cancel.json or cancel-force.json', shown, this.id, '/outcome');
    } else if (receipt.outcome === 'force_stopped' && this.cancelForceEntry === undefined) {
      this.sink.add('RECEIPT_CANCEL_UNREQUESTED', 'the receipt says force_stopped but the job has no cancel-force.json', shown, this.id, '/outcome');
    }
  }

  /** RCPT-5 / I4: the receipt's description of an output file against the file. */
  private checkReceiptOutput(receipt: ReceiptRecord, stream: Stream): void {
    const shown = this.shown('receipt.json');
    const summary: OutputSummary | null = receipt[stream];
    if (summary === null) {
      // A payload generation has no output files to describe (PAYLOAD-1).
      const payload = this.spec !== undefined && this.spec.argv === undefined;
      if (!payload && this.gens.get(receipt.gen)?.exec !== undefined) {
        this.sink.add('RECEIPT_OUTPUT', `${stream} is null but generation ${receipt.gen} recorded an execution`, shown, this.id, `/${stream}`);
      }
      return;
    }
    const name = `${stream}.${summary.gen}`;
    const slots = this.gens.get(summary.gen);
    if (slots?.exec === undefined) {
      this.sink.add('RECEIPT_OUTPUT', `${stream} describes generation ${summary.gen}, which recorded no execution`, shown, this.id, `/${stream}/gen`);
    }
    if (slots?.[stream] === undefined) {
      this.sink.add('RECEIPT_OUTPUT', `${stream} describes ${name}, which does not exist`, shown, this.id, `/${stream}`);
      return;
    }
    const file = this.outputs[stream].get(summary.gen);
    if (file === undefined || file.sha256 === undefined) return; // refused or vanished: reported already
    if (file.size !== summary.bytes_kept) {
      this.sink.add('RECEIPT_OUTPUT', `${name} is ${file.size} bytes but ${stream}.bytes_kept is ${summary.bytes_kept}`, shown, this.id, `/${stream}/bytes_kept`);
    } else if (file.sha256 !== summary.sha256) {
      this.sink.add('RECEIPT_OUTPUT', `the SHA-256 of ${name} is ${file.sha256} but ${stream}.sha256 is ${summary.sha256}`, shown, this.id, `/${stream}/sha256`);
    }
    if (summary.bytes_total !== null) {
      if (summary.bytes_total < summary.bytes_kept) {
        this.sink.add('RECEIPT_OUTPUT', `${stream}.bytes_total ${summary.bytes_total} is less than bytes_kept ${summary.bytes_kept}`, shown, this.id, `/${stream}/bytes_total`);
      } else if (summary.truncated !== summary.bytes_total > summary.bytes_kept) {
        this.sink.add('RECEIPT_OUTPUT', `${stream}.truncated is ${String(summary.truncated)} but ${summary.bytes_total} bytes were produced and ${summary.bytes_kept} kept`, shown, this.id, `/${stream}/truncated`);
      }
    }
  }

  private summary(): JobSummary {
    const summary: JobSummary = { id: this.id, finished: this.receiptEntry !== undefined };
    if (this.gated) summary.gated = true;
    // What a finished job's spec says matters to no queue-wide check but its outcome (AFTER-1): keep big queues small in memory.
    if (summary.finished) {
      if (this.receipt !== undefined) summary.outcome = this.receipt.outcome;
      return summary;
    }
    if (this.spec !== undefined) {
      summary.spec = { priority: this.spec.priority, dedupe: this.spec.dedupe, lane: this.spec.lane, laneSlots: this.spec.lane_slots ?? 1 };
      const gate = gateOf(this.spec, this.releaseEntry !== undefined, this.cancelEntry !== undefined || this.cancelForceEntry !== undefined);
      if (gate !== undefined) summary.gate = gate;
    }
    let top = 0;
    for (const [gen, slots] of this.gens) if (slots.claim !== undefined && gen > top) top = gen;
    const slots = this.gens.get(top);
    if (top === 0 || slots === undefined || slots.end !== undefined) return summary;
    const records = this.records.get(top);
    const claim = records?.claim;
    if (claim === undefined) return summary; // unreadable claim: reported, and nobody can judge it
    const exec: OpenClaim['exec'] =
      slots.exec === undefined ? { kind: 'none' } : records?.exec === undefined ? { kind: 'invalid' } : { kind: 'recorded', group: records.exec.group };
    summary.open = {
      gen: top,
      claim,
      lastRenewalMs: renewedAt(claim, records?.state),
      exec,
      claimPath: this.shown(genRecordName('claim', top)),
      execPath: this.shown(genRecordName('exec', top)),
    };
    return summary;
  }
}
