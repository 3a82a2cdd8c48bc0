/**
 * The record layer: from bytes to a trusted record, or to findings that say
 * why not. Every reader goes through checkRecord (or readRecord, which adds
 * the safe read of SEC-2..SEC-6), which applies REC-4 in order and stops at
 * the first step that fails:
 *
 *   1. size within RECORD_MAX (REC-2, SEC-4);
 *   2. compact form (REC-1): src/records/json.ts;
 *   3. a supported version (VER-1);
 *   4. the type the name says (REC-3);
 *   5. the schema (REC-5), with unknown members judged by VER-2/VER-3;
 *   6. the members the name fixes: job id, generation, ... (REC-7).
 *
 * Bad input is never an exception here: it is a list of findings. What is
 * not the file's fault (it is missing, the disk failed) is an FsjobError.
 */
import { createHash } from 'node:crypto';
import { FsjobError, type FsjobErrorCode, isFsjobError } from '../base/errors.ts';
import { type Finding, type FindingCode, hasErrors, makeFinding } from './findings.ts';
import { type JsonObject, parseRecordBytes } from './json.ts';
import { serializeBuilt, serializeRecord } from './json-write.ts';
import { JOB_ID_PATTERN, type RecordExpectations } from './names.ts';
import type { DocumentByType, RecordByType } from './generated/types.ts';
import { basename, dirname } from 'node:path';
import { Dir, type ReadBoundedOptions } from '../fs/safefs.ts';
import { compiledValidator, type DocumentType, memberFindings, type RecordType, type SchemaError, schemaErrors, schemaFindings } from './schemas.ts';
import { plainSpec } from './plain-spec.ts';
import { builtSpecBytes } from './spec-bytes.ts';

export { parseRecordBytes } from './json.ts';
export { serializeRecord } from './json-write.ts';
export type { ParseFailure, ParseFailureCode, ParseResult } from './json.ts';
export { recordNameOf, parseGeneration, parseHoldNumber, type RecordExpectations, type RecordName } from './names.ts';
export { RECORD_TYPES, DOCUMENT_TYPES, isRecordType, isDocumentType, type RecordType, type DocumentType } from './schemas.ts';
export type * from './generated/types.ts';
import type { ReceiptRecord } from './generated/types.ts';

/** How a job finished (spec/running.md, RCPT-4): the `outcome` of its receipt. */
export type ReceiptOutcome = ReceiptRecord['outcome'];
/** Why a job was rejected or lost (RCPT-4), or null for every other outcome: the `reason` of its receipt. */
export type ReceiptReason = ReceiptRecord['reason'];

/** The protocol version this reader implements (VER-1). */
import { PROTOCOL_MAJOR as READER_MAJOR, PROTOCOL_MINOR as READER_MINOR, PROTOCOL_VERSION, RECORD_MAX, REQUEST_MAX } from '../base/constants.ts';
const VERSION_FORM = /^(0|[1-9][0-9]{0,5})\.(0|[1-9][0-9]{0,5})$/;

/** Options of `checkRecord` and `inspectRecord`: what the file name fixes (REC-7) and where the record came from. */
export interface CheckOptions extends RecordExpectations {
  /** The path findings name; "-" when omitted. */
  path?: string;
  /**
   * The REC-1/REQ-1 parser. A replacement must answer exactly what
   * parseRecordBytes answers for every input. Default: the one useParser
   * registered, else parseRecordBytes.
   */
  parse?: typeof parseRecordBytes;
}

let defaultParse: typeof parseRecordBytes = parseRecordBytes;

/**
 * Parse records with `parse` from now on where no caller names a parser:
 * src/records/compiled.ts registers fastParseRecordBytes (fast-json.ts:
 * native JSON.parse for a record in the compact form writers produce, the
 * scanner for everything else; test/validator/queue-fastjson.test.ts proves
 * they answer alike) where many records are read, the consumer's spec per
 * job among them. A producer keeps the scanner and a smaller bundle.
 */
export function useParser(parse: typeof parseRecordBytes): void {
  defaultParse = parse;
}

/** A record that passed (with any info findings), or the findings that reject it. */
export type Inspection<T> = { ok: true; value: T; findings: Finding[] } | { ok: false; findings: Finding[] };

/** The largest file of a document type, in bytes. */
export function maxBytesOf(type: DocumentType): number {
  return type === 'request' ? REQUEST_MAX : RECORD_MAX;
}

function knownJobId(value: unknown): string | undefined {
  return typeof value === 'string' && JOB_ID_PATTERN.test(value) ? value : undefined;
}

/**
 * Check the bytes of a record of `type` (or of a request) and return the
 * value with any info findings, or the findings that make it invalid.
 */
export function inspectRecord<T extends DocumentType>(type: T, bytes: Uint8Array, options: CheckOptions = {}): Inspection<DocumentByType[T]> {
  const path = options.path ?? '-';
  const isRequest = type === 'request';
  const byteClause = isRequest ? 'REQ-1' : 'REC-1';
  let jobId: string | null = options.expectedJobId ?? null;

  const max = maxBytesOf(type);
  if (bytes.length > max) {
    return rejection(path, jobId, 'RECORD_TOO_LARGE', `the file is ${bytes.length} bytes, over the bound of ${max}`, { clause: isRequest ? 'REQ-1' : 'REC-2' });
  }

  const parsed = (options.parse ?? defaultParse)(bytes, isRequest ? 'request' : 'record');
  if (!parsed.ok) {
    const { code, detail, offset, field } = parsed.failure;
    return rejection(path, jobId, code, `${detail} (at byte ${offset})`, { clause: byteClause, ...(field === undefined ? {} : { field }) });
  }
  const value: JsonObject = parsed.value;
  jobId ??= knownJobId(value['job_id']) ?? knownJobId(value['id']) ?? null;

  // VER-1: the version decides which rules apply, so it is checked first.
  const version = value['fsjob'];
  let minor = READER_MINOR;
  if (!(isRequest && version === undefined)) {
    const match = typeof version === 'string' ? VERSION_FORM.exec(version) : null;
    if (match === null) {
      const what = version === undefined ? 'the record has no member "fsjob"' : `"fsjob" is ${JSON.stringify(version)}, not of the form "<major>.<minor>"`;
      return rejection(path, jobId, 'RECORD_VERSION', `unsupported_version: ${what}`, { field: '/fsjob' });
    }
    if (Number(match[1]) !== READER_MAJOR) {
      return rejection(path, jobId, 'RECORD_VERSION', `unsupported_version: fsjob ${String(version)} is major ${match[1]}; this reader reads major ${READER_MAJOR}`, { field: '/fsjob' });
    }
    minor = Number(match[2]);
  }

  // REC-3: a record of another type under this name fails its schema in many
  // places; one finding saying what it is helps more than all of them.
  if (!isRequest && value['type'] !== type) {
    const found = value['type'];
    const what = typeof found === 'string' ? `a ${JSON.stringify(found)} record is stored under a ${type} name` : `the record has no string member "type" (expected ${JSON.stringify(type)})`;
    return rejection(path, jobId, 'RECORD_TYPE_MISMATCH', what, { field: '/type' });
  }

  // A payload job's common spec is checked by hand (plain-spec.ts); anything it doubts takes the schema.
  const errors = type === 'spec' && plainSpec(value) ? NO_ERRORS : schemaErrors(type, value);
  if (errors.length > 0) return { ok: false, findings: schemaFindings(errors, type, { path, jobId }) };

  const mismatches = nameFindings(type, value, options, path, jobId);
  if (mismatches.length > 0) return { ok: false, findings: mismatches };

  const notes: Finding[] = [];
  if (minor > READER_MINOR) {
    notes.push(makeFinding('RECORD_NEWER_MINOR', `the record is fsjob ${String(version)}, newer than this reader's ${READER_MAJOR}.${READER_MINOR}`, { path, jobId, field: '/fsjob' }));
  }
  return { ok: true, value: value as unknown as DocumentByType[T], findings: notes };
}

/** One finding that rejects a record (a plain function: inspectRecord runs once per record of an audit, and a closure per call costs). */
function rejection(path: string, jobId: string | null, code: FindingCode, what: string, extra: { field?: string; clause?: string } = {}): Inspection<never> {
  return { ok: false, findings: [makeFinding(code, what, { path, jobId, ...extra })] };
}

/** Records stored in a job directory, whose directory name is their job id. */
const JOB_RECORDS: ReadonlySet<DocumentType> = new Set(['spec', 'claim', 'exec', 'state', 'end', 'cancel', 'receipt', 'release']);

/** REC-7: what the name a record is stored under fixes about its members. Allocates nothing for a record that matches. */
function nameFindings(type: DocumentType, value: JsonObject, expect: RecordExpectations, path: string, jobId: string | null): Finding[] {
  let findings: Finding[] | undefined;
  if (expect.expectedJobId !== undefined && JOB_RECORDS.has(type)) {
    const member = type === 'spec' ? 'id' : 'job_id';
    if (value[member] !== expect.expectedJobId) {
      (findings ??= []).push(makeFinding('RECORD_ID_MISMATCH', `${member} is ${JSON.stringify(value[member])} but the record is in the directory of job ${expect.expectedJobId}`, { path, jobId, field: `/${member}` }));
    }
  }
  if (expect.expectedGen !== undefined && value['gen'] !== expect.expectedGen) {
    (findings ??= []).push(makeFinding('RECORD_GEN_MISMATCH', `gen is ${JSON.stringify(value['gen'])} but the file name says generation ${expect.expectedGen}`, { path, jobId, field: '/gen' }));
  }
  if (expect.expectedForce !== undefined && value['force'] !== expect.expectedForce) {
    (findings ??= []).push(nameMismatch(value, 'force', expect.expectedForce === true ? 'cancel-force.json holds force true' : 'cancel.json holds force false', path, jobId));
  }
  if (expect.expectedKind !== undefined && value['kind'] !== expect.expectedKind) {
    (findings ??= []).push(nameMismatch(value, 'kind', `the hold is under ${expect.expectedKind === 'lane' ? 'lanes' : 'dedupe'}/`, path, jobId));
  }
  if (expect.expectedWorkerId !== undefined && value['worker_id'] !== expect.expectedWorkerId) {
    (findings ??= []).push(nameMismatch(value, 'worker_id', `the file is workers/${expect.expectedWorkerId}.json`, path, jobId));
  }
  if (expect.expectedKeyHash !== undefined && typeof value['key'] === 'string') {
    // LANE-6: a lane hold of slot k above 1 is under the SHA-256 of key, line feed and k.
    const slot = typeof value['slot'] === 'number' && value['slot'] > 1 ? value['slot'] : 1;
    const hash = sha256Hex(slot === 1 ? value['key'] : `${value['key']}\n${slot}`);
    if (hash !== expect.expectedKeyHash) {
      const what = slot === 1 ? 'the SHA-256 of key' : `the SHA-256 of key and slot ${slot} (LANE-6)`;
      (findings ??= []).push(makeFinding('RECORD_NAME_MISMATCH', `${what} is ${hash} but the hold is under ${expect.expectedKeyHash}/`, { path, jobId, field: '/key' }));
    }
  }
  return findings ?? NO_FINDINGS;
}

const NO_FINDINGS: Finding[] = [];
const NO_ERRORS: readonly SchemaError[] = [];

function nameMismatch(value: JsonObject, member: string, where: string, path: string, jobId: string | null): Finding {
  return makeFinding('RECORD_NAME_MISMATCH', `${member} is ${JSON.stringify(value[member])} but ${where}`, { path, jobId, field: `/${member}` });
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Findings for the bytes of a record of `type`; empty or info-only when valid. Never throws for bad input. */
export function checkRecord(type: DocumentType, bytes: Uint8Array, options: CheckOptions = {}): Finding[] {
  return inspectRecord(type, bytes, options).findings;
}

/** Whether findings leave a record valid (infos and warnings do). */
export function isValidRecord(findings: readonly Finding[]): boolean {
  return !hasErrors(findings);
}

/**
 * The bytes to publish for a record a writer built: serialized (REC-1) and
 * checked against its schema, so that nothing invalid is ever written (VER-4).
 * Throws INVALID_RECORD (or TOO_LARGE) naming the first finding.
 */
export function encodeRecord<T extends RecordType>(type: T, value: RecordByType[T], options: CheckOptions = {}): Buffer {
  const bytes = serializeRecord(value);
  const findings = checkRecord(type, bytes, options);
  const first = findings.find((finding) => finding.severity === 'error');
  if (first !== undefined) {
    throw new FsjobError('INVALID_RECORD', `refusing to write an invalid ${type} record: ${first.message}`, {
      clause: first.clause,
      ...(options.path === undefined ? {} : { path: options.path }),
    });
  }
  return bytes;
}

/**
 * Whether every record this process builds is checked against its schema
 * before it is written: FSJOB_CHECK_WRITES=1, which the test suite sets
 * (tools/test/run.ts), so that a writer that builds a record wrong fails
 * its tests.
 */
const CHECK_WRITES = process.env['FSJOB_CHECK_WRITES'] === '1';

/** Identities whose first record passed encodeRecord's full check. */
const checkedIdentities = new WeakSet<object>();

/**
 * The bytes of a record this writer built itself, written once: serialized
 * (REC-1: compact form, no lone surrogate, integers outside payload and
 * result; REC-2: RECORD_MAX) without being parsed back and run through its
 * schema. The generated validators check what others wrote; what a writer
 * builds is valid by construction (VER-4): fixed members and enums from the
 * code, numbers from the clock and counters, texts clipped to their bounds
 * (clipUtf8). The one part a writer takes from outside, an identity read
 * from the operating system (`identity`: the owner, `by`, the producer), is
 * checked with the first record that carries it, against what that
 * record's schema says of the member (checkIdentity), and again whenever
 * another identity object comes. FSJOB_CHECK_WRITES=1 checks every record
 * in full (the test suite does).
 */
export function encodeBuilt<T extends RecordType>(type: T, value: RecordByType[T], options: CheckOptions = {}, identity?: object): Buffer {
  if (CHECK_WRITES) {
    const bytes = encodeRecord(type, value, options);
    if (identity !== undefined) checkedIdentities.add(identity);
    return bytes;
  }
  if (identity !== undefined && !checkedIdentities.has(identity)) {
    checkIdentity(type, value, identity, options);
    checkedIdentities.add(identity);
  }
  const outside = FROM_OUTSIDE[type];
  return outside === undefined ? serializeRecord(value) : serializeBuilt(value as unknown as Record<string, unknown>, outside);
}

/**
 * The members a consumer's records take from outside its own code, which
 * encodeBuilt walks for REC-1 (json-write.ts serializeBuilt): a handler's result,
 * a message (a handler's error text), an output summary, an exit status and
 * a process group read from the system. Every other member is written by
 * the builder (generation.ts) from constants, clocks, counters and checked
 * identities. Types not named here (the producer's spec, with its caller's
 * payload, and every other record) are walked whole.
 */
export const FROM_OUTSIDE: Partial<Record<RecordType, readonly string[]>> = {
  claim: [],
  exec: ['group'],
  state: ['progress'],
  end: ['status'],
  receipt: ['message', 'status', 'stdout', 'stderr', 'result'],
};

/**
 * encodeBuilt's check of an identity it has not seen: the member of the
 * record that holds it, against what the record's schema says of that
 * member (schemas.ts memberFindings), not the whole record through the
 * schema interpreter, whose first run in a process costs milliseconds (a
 * producer's first spec; every `fsjob enqueue` call). Throws
 * INVALID_RECORD as encodeRecord does, naming the member.
 *
 * Where the compiled validators are loaded (compiled.ts: a consumer, which
 * builds a new identity, the group of ID-8, for every command's exec
 * record), the whole record goes through them first: microseconds, where
 * the interpreter's member check cost the worker's main thread some 0.03
 * ms per command. A record this writer built is of its own minor, so the
 * schema's `then` branch closes the member there as memberSchema does: a
 * record that passes passes the member's check. Only one that fails is
 * judged on the member alone, as before, so that the refusal names the
 * member's finding and its clause (test/records/encode-built.test.ts).
 */
function checkIdentity(type: RecordType, value: object, identity: object, options: CheckOptions): void {
  if (compiledValidator(type)?.(value) === true) return;
  const member = Object.keys(value).find((key) => (value as Record<string, unknown>)[key] === identity) ?? '(none)';
  const findings = memberFindings(type, member, identity, { path: options.path ?? '-', jobId: options.expectedJobId ?? null });
  const first = findings.find((finding) => finding.severity === 'error');
  if (first !== undefined) {
    throw new FsjobError('INVALID_RECORD', `refusing to write an invalid ${type} record: ${first.message}`, {
      clause: first.clause,
      ...(options.path === undefined ? {} : { path: options.path }),
    });
  }
}

/** safefs refusals (SEC-2..SEC-6) and the findings that report them. */
const REFUSALS: Partial<Record<FsjobErrorCode, FindingCode>> = {
  SYMLINK_REFUSED: 'RECORD_SYMLINK',
  NOT_REGULAR: 'RECORD_NOT_REGULAR',
  TOO_LARGE: 'RECORD_TOO_LARGE',
  UNSAFE_MODE: 'RECORD_MODE',
  FOREIGN_OWNER: 'RECORD_OWNER',
};

/** Options of `readRecord`: those of `checkRecord`, plus the queue root its parents are checked from (SEC-2). */
export interface ReadRecordOptions extends CheckOptions, Pick<ReadBoundedOptions, 'fs' | 'root' | 'trust'> {
  /** Resolve to undefined instead of throwing NOT_FOUND when the file does not exist. */
  allowMissing?: boolean;
}

/**
 * Read and check the record at `path` (REC-4 from the first step): the file
 * is read with safefs.readBounded, so a symlink, FIFO, oversized, unsafe-mode
 * or foreign file is refused without blocking and reported as a finding
 * naming the path and the clause. Throws NOT_FOUND (unless allowMissing) and
 * IO: those are not the record's fault.
 */
export async function readRecord<T extends DocumentType>(
  path: string,
  type: T,
  options: ReadRecordOptions & { allowMissing: true },
): Promise<Inspection<DocumentByType[T]> | undefined>;
export async function readRecord<T extends DocumentType>(path: string, type: T, options?: ReadRecordOptions): Promise<Inspection<DocumentByType[T]>>;
export async function readRecord<T extends DocumentType>(
  path: string,
  type: T,
  options: ReadRecordOptions = {},
): Promise<Inspection<DocumentByType[T]> | undefined> {
  const { fs, root, trust, ...check } = options;
  const dir = new Dir(dirname(path), { ...(fs === undefined ? {} : { fs }), ...(root === undefined ? {} : { root }), ...(trust === undefined ? {} : { trust }) });
  return readRecordIn(dir, basename(path), type, { ...check, path: check.path ?? path });
}

/** readRecord of the entry `name` of a directory handle (a job directory, LAYOUT-5). */
export async function readRecordIn<T extends DocumentType>(
  dir: Dir,
  name: string,
  type: T,
  options: CheckOptions & { allowMissing: true },
): Promise<Inspection<DocumentByType[T]> | undefined>;
export async function readRecordIn<T extends DocumentType>(dir: Dir, name: string, type: T, options?: CheckOptions & { allowMissing?: boolean }): Promise<Inspection<DocumentByType[T]>>;
export async function readRecordIn<T extends DocumentType>(
  dir: Dir,
  name: string,
  type: T,
  options: CheckOptions & { allowMissing?: boolean } = {},
): Promise<Inspection<DocumentByType[T]> | undefined> {
  return readRecordNow(dir, name, type, options);
}

/** readRecordIn, synchronously: its read and its check are synchronous calls (a consumer reads a spec per job without a promise). */
export function readRecordNow<T extends DocumentType>(dir: Dir, name: string, type: T, options: CheckOptions & { allowMissing: true }): Inspection<DocumentByType[T]> | undefined;
export function readRecordNow<T extends DocumentType>(dir: Dir, name: string, type: T, options?: CheckOptions & { allowMissing?: boolean }): Inspection<DocumentByType[T]>;
export function readRecordNow<T extends DocumentType>(dir: Dir, name: string, type: T, options: CheckOptions & { allowMissing?: boolean } = {}): Inspection<DocumentByType[T]> | undefined {
  const { allowMissing, ...check } = options;
  let bytes: Buffer | undefined;
  try {
    bytes = dir.readNow(name, maxBytesOf(type), { allowMissing: allowMissing === true });
  } catch (error) {
    const code = isFsjobError(error) ? REFUSALS[error.code] : undefined;
    if (code === undefined || !isFsjobError(error)) throw error;
    // safefs messages read "<what is wrong>; <what to do>": keep the first half.
    const what = error.message.split('; ')[0] ?? error.message;
    const finding = makeFinding(code, what, {
      path: check.path ?? dir.entry(name),
      jobId: check.expectedJobId ?? null,
      clause: error.clause,
    });
    return { ok: false, findings: [finding] };
  }
  if (bytes === undefined) return undefined;
  return inspectRecord(type, bytes, { ...check, path: check.path ?? dir.entry(name) });
}

/**
 * encodeBuilt for a spec its producer built (src/producer/enqueue.ts): the
 * bytes of builtSpecBytes (spec-bytes.ts) where it vouches for them and the
 * producer's identity was checked with an earlier spec; encodeBuilt
 * otherwise, which checks that identity and walks the whole spec.
 * FSJOB_CHECK_WRITES=1 checks every spec in full, as it does every record.
 */
export function encodeBuiltSpec(spec: RecordByType['spec'], options: CheckOptions = {}): Buffer {
  if (!CHECK_WRITES && checkedIdentities.has(spec.producer)) {
    const bytes = builtSpecBytes(spec as unknown as Record<string, unknown>);
    if (bytes !== undefined) return bytes;
  }
  return encodeBuilt('spec', spec, options, spec.producer);
}
