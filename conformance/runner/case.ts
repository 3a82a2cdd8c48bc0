/**
 * What a conformance case is, and the context it runs in. A case names the
 * clauses it checks, the level they belong to (spec/README.md) and whether they
 * are MUST or SHOULD; it runs against the implementation's own roles in a
 * private work directory and reports failures as data: the clauses broken,
 * what happened, and the evidence on disk.
 */
import { mkdir, readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { JOB_ID_PATTERN } from '../../src/records/names.ts';
import type { JobRequest } from '../../src/records/codec.ts';
import { hasRole, type Feature, type Manifest, type Placeholders, type Role } from './manifest.ts';
import type { Pool } from './pool.ts';
import { describeExit, runRole, startRole, type ProcessResult, type RoleRunOptions, type Spawned } from './process.ts';
import type { CaseResult, CrashPoint, Failure, Level, Strength } from './report.ts';
import { createQueue, writeRequest } from './stage.ts';
import { runRoleFaulted, startRoleInjected, startRolePaused, type CrashRun, type CrashRunResult, type FaultPoint, type PausedRoleOptions, type PausePoint } from './pause.ts';
import { listing, snapshotQueue, type QueueSnapshot } from './inspect.ts';

export type CrashMode = 'none' | 'quick' | 'full';
/** Power-loss states (cases/power.ts): none, the quick sample, or every crash point. */
export type PowerMode = 'none' | 'quick' | 'full';

export interface RunSettings {
  crash: CrashMode;
  power: PowerMode;
  /** Every vector instead of one per rule. */
  allVectors: boolean;
  keep: boolean;
  /** Progress lines for long sweeps (a terminal), or undefined. */
  progress?: (text: string) => void;
}

export interface ConformanceCase {
  name: string;
  /** Clause ids (and invariants I1..I8) the case checks. */
  clauses: string[];
  level: Level;
  strength: Strength;
  /** Roles the case needs besides produce and consume; it is skipped without them. */
  roles?: Role[];
  /** Optional features (spec/README.md) the case needs; it is skipped when the manifest does not claim them (MANIFEST-3). */
  features?: Feature[];
  /**
   * A case for a consumer that does NOT claim these features (CLAIM-11):
   * it runs when at least one of them is unclaimed.
   */
  unclaimed?: Feature[];
  /** Needs the reference implementation as the other side (interoperability). */
  interop?: boolean;
  /** Needs root (chown, ns_last_pid). */
  root?: boolean;
  /** Only with --crash quick or full. */
  crash?: boolean;
  /** Only with --crash power or power-full. */
  power?: boolean;
  /** Takes the whole pool: timing or pid-sensitive. */
  exclusive?: boolean;
  /** Long-running: started first so that it does not become the tail of the run. */
  heavy?: boolean;
  /** Fans out its own work through ctx.pool and takes no unit itself. */
  fansOut?: boolean;
  /**
   * Waits on the spec's timers for most of its run (CANCEL_GRACE, RENEW_INTERVAL): it takes no unit, so
   * ten seconds of sleep do not hold back CPU-bound cases; its bounds carry a scheduling tolerance.
   */
  idle?: boolean;
  run: (ctx: CaseContext) => Promise<void>;
}

export class Skip extends Error {}

export interface Produced {
  result: ProcessResult;
  /** The id printed, when the producer exited 0 and printed exactly one id. */
  id?: string;
  requestFile: string;
}

const MARKER_NAME = 'FSJOB_CONFORMANCE_MARKER';

export class CaseContext {
  readonly impl: Manifest;
  readonly reference: Manifest;
  readonly dir: string;
  readonly pool: Pool;
  readonly settings: RunSettings;
  readonly failures: Failure[] = [];
  readonly notes: string[] = [];
  /** A variable only the roles get: EXEC-6 says it must never reach a command. */
  readonly marker = { name: MARKER_NAME, value: `leak-${randomBytes(6).toString('hex')}` };
  crashPoints = 0;
  private requests = 0;

  constructor(input: { impl: Manifest; reference: Manifest; dir: string; pool: Pool; settings: RunSettings }) {
    this.impl = input.impl;
    this.reference = input.reference;
    this.dir = input.dir;
    this.pool = input.pool;
    this.settings = input.settings;
  }

  get isReference(): boolean {
    return this.impl.file === this.reference.file;
  }

  fail(clauses: string[], message: string, evidence: string[] = [], crash?: CrashPoint): void {
    this.failures.push(crash === undefined ? { clauses, message, evidence } : { clauses, message, evidence, crash });
  }

  /** Records a failure unless `ok`; returns `ok`. */
  check(ok: boolean, clauses: string[], message: string, evidence: string[] | (() => string[]) = []): boolean {
    if (!ok) this.fail(clauses, message, typeof evidence === 'function' ? evidence() : evidence);
    return ok;
  }

  skip(reason: string): never {
    throw new Skip(reason);
  }

  note(text: string): void {
    this.notes.push(text);
  }

  /** A fresh directory inside the case's work directory (real path: no symlink in it). */
  async subdir(label: string): Promise<string> {
    const dir = path.join(this.dir, label);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    return realpath(dir);
  }

  /**
   * A new queue `<label>/q`: created as spec/producer.md says by the runner, or by
   * the init role of `init` when given (producer/init tests that role; other
   * cases spare its cost).
   */
  async newQueue(label: string, options: { init?: Manifest } = {}): Promise<string> {
    const base = await this.subdir(label);
    const root = path.join(base, 'q');
    const via = options.init;
    if (via !== undefined && hasRole(via, 'init')) {
      const result = await runRole(via, 'init', { queue: root });
      if (result.code !== 0) {
        this.fail(['INIT-1', 'INIT-2'], `${via.name}: init failed, so the case could not start`, [describeExit(result)]);
        throw new Skip(`init failed: ${describeExit(result)}`);
      }
    } else {
      await createQueue(root);
    }
    return root;
  }

  /** Runs a role of `via` (default: the implementation under test, or the reference for a level it does not claim). */
  role(role: Role, values: Placeholders, options: RoleRunOptions & { via?: Manifest } = {}): Promise<ProcessResult> {
    return runRole(options.via ?? this.sideFor(role), role, values, this.withMarker(options));
  }

  startRole(role: Role, values: Placeholders, options: RoleRunOptions & { via?: Manifest } = {}): Spawned {
    return startRole(options.via ?? this.sideFor(role), role, values, this.withMarker(options));
  }

  /**
   * MANIFEST-3: who plays a role. The implementation, unless it does not
   * claim the level the role belongs to (a producer-only implementation's
   * jobs are consumed by the reference, and the other way round).
   */
  sideFor(role: Role): Manifest {
    const { levels } = this.impl.profile;
    if (role === 'produce' && !levels.has('producer')) return this.reference;
    if (role === 'consume' && !levels.has('consumer')) return this.reference;
    return this.impl;
  }

  /**
   * Starts a role under the crash injector that stops itself just before the
   * call `pause` names, so the case can run the other side first and then
   * `resume()` it (runner/pause.ts): a forced interleaving, not a lucky one.
   */
  startRolePaused(role: Role, values: Placeholders, pause: PausePoint, options: PausedRoleOptions & { via?: Manifest } = {}): Promise<CrashRun> {
    return startRolePaused(options.via ?? this.impl, role, values, pause, this.withMarker(options));
  }

  /** Starts a role under the crash injector without a pause point, e.g. to move its wall clock while it runs (runner/pause.ts). */
  startRoleInjected(role: Role, values: Placeholders, options: PausedRoleOptions & { via?: Manifest } = {}): Promise<CrashRun> {
    return startRoleInjected(options.via ?? this.impl, role, values, this.withMarker(options));
  }

  /** Runs a role of the implementation with `fault` forced on its links or renames (runner/pause.ts runRoleFaulted). */
  roleFaulted(role: Role, values: Placeholders, fault: FaultPoint, options: PausedRoleOptions = {}): Promise<CrashRunResult> {
    return runRoleFaulted(this.impl, role, values, fault, this.withMarker(options));
  }

  private withMarker<T extends RoleRunOptions>(options: T): T {
    return { ...options, env: { [this.marker.name]: this.marker.value, ...(options.env ?? {}) } };
  }

  /**
   * Writes the request (compact, MANIFEST-2) and runs produce. When the
   * reference produces for another implementation (interoperability), it
   * runs in this process through src/producer: the same records as its CLI
   * writes, without a Node start per job.
   */
  async produce(queue: string, request: JobRequest, options: { via?: Manifest; name?: string } = {}): Promise<Produced> {
    this.requests += 1;
    const requestFile = await writeRequest(path.join(this.dir, 'requests'), options.name ?? `r${this.requests}`, request);
    const via = options.via ?? this.sideFor('produce');
    if (via.file === this.reference.file && !this.isReference) return this.produceInProcess(queue, request, requestFile);
    const result = await this.role('produce', { queue, request: requestFile }, { via });
    const printed = result.stdout.trim();
    const id = result.code === 0 && JOB_ID_PATTERN.test(printed) ? printed : undefined;
    return id === undefined ? { result, requestFile } : { result, id, requestFile };
  }

  private async produceInProcess(queue: string, request: JobRequest, requestFile: string): Promise<Produced> {
    const { enqueue, openQueue, isFsjobError } = await import('../../src/producer/index.ts');
    const began = Date.now();
    const argv = ['(in process) src/producer enqueue', queue, requestFile];
    try {
      const { id } = await enqueue(await openQueue(queue), await readFile(requestFile), { cwd: this.reference.dir });
      return { result: { argv, code: 0, signal: null, timedOut: false, stdout: `${id}\n`, stderr: '', ms: Date.now() - began }, id, requestFile };
    } catch (error) {
      const code = isFsjobError(error, 'DEDUPE_HELD') ? 3 : 1;
      return { result: { argv, code, signal: null, timedOut: false, stdout: '', stderr: String((error as Error).message), ms: Date.now() - began }, requestFile };
    }
  }

  /** Produces and records a failure unless the job was accepted with an id on stdout. */
  async produceOk(queue: string, request: JobRequest, clauses: string[], options: { via?: Manifest; name?: string } = {}): Promise<string | undefined> {
    const produced = await this.produce(queue, request, options);
    const printed = produced.result.stdout.trim();
    if (produced.id === undefined && produced.result.code === 0 && printed !== '' && !printed.includes('\n')) {
      const via = options.via ?? this.impl;
      this.fail(['LAYOUT-4', 'MANIFEST-1'], `${via.name}: produce accepted the job but printed ${JSON.stringify(printed.slice(0, 80))}, which is not a job id (19 digits, a hyphen, 16 lowercase hex digits)`, [describeExit(produced.result)]);
    } else if (produced.id === undefined) {
      const via = options.via ?? this.impl;
      this.fail(clauses.length > 0 ? clauses : ['ENQ-4', 'MANIFEST-1'], `${via.name}: produce did not accept a valid request (it must exit 0 and print the id alone)`, [
        describeExit(produced.result),
        `stdout: ${JSON.stringify(produced.result.stdout.slice(0, 200))}`,
        `request: ${JSON.stringify(request).slice(0, 300)}`,
      ]);
    }
    return produced.id;
  }

  /** Runs consume and records a failure unless it exits 0 in time. */
  async consumeOk(queue: string, clauses: string[], options: RoleRunOptions & { via?: Manifest } = {}): Promise<ProcessResult> {
    const result = await this.role('consume', { queue }, options);
    const via = options.via ?? this.impl;
    if (result.code !== 0 || result.timedOut) {
      this.fail(result.timedOut ? [...clauses, 'MANIFEST-2'] : [...clauses, 'MANIFEST-1'], `${via.name}: consume ${result.timedOut ? 'did not finish within its time limit' : 'failed'} (it must process runnable jobs and exit 0)`, [
        describeExit(result),
        ...listing(await snapshotQueue(queue)),
      ]);
    }
    return result;
  }

  snapshot(queue: string): Promise<QueueSnapshot> {
    return snapshotQueue(queue);
  }
}

/** Parses a start log written by case commands ("start <tag>" lines), in order. */
export async function readStarts(file: string): Promise<string[]> {
  let text = '';
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((line) => line.startsWith('start '))
    .map((line) => line.slice('start '.length));
}

export function countBy(items: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(item, (counts.get(item) ?? 0) + 1);
  return counts;
}

export type { CaseResult };
