/**
 * From a request (REQ-1) to the members of a spec record (spec/spec-record.md) with
 * every default filled (SPEC-2), and the job's stdin as bytes.
 *
 * A request is checked by the record layer exactly as `fsjob validate --type
 * request` checks it (byte form, version, schema), so a producer refuses
 * precisely what the validator reports. Nothing here touches the disk:
 * ENQ-1 refuses an invalid request before anything is written.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import { checkBytes, checkFunction, checkMethods, checkOptionsObject, checkString } from '../base/option-checks.ts';
import { FsjobError } from '../base/errors.ts';
import type { Finding } from '../records/findings.ts';
import { inspectRecord, type JobRequest, type JsonValue, type SpecRecord } from '../records/codec.ts';
import { RawJson, stringifyKeepingRaw } from '../records/raw-json.ts';
import { isWellFormed } from '../records/bytes.ts';
import { LONE_SURROGATE_ESCAPE } from '../records/spec-bytes.ts';
import { ENV_NAME, HANDLER, LABEL_NAME, PLAIN_INTEGERS, plainMap, plainObject, plainString } from '../records/plain-spec.ts';
import { KILL_GRACE_DEFAULT, NEST_MAX, OUTPUT_DEFAULT, PROTOCOL_VERSION, REQUEST_MAX, SLOTS_MAX, STDIN_MAX, TIMEOUT_DEFAULT } from '../base/constants.ts';

/** The spec members a request decides: the spec without fsjob, type, id, created_ms, stdin and producer. */
export type SpecFields = Omit<SpecRecord, 'fsjob' | 'type' | 'id' | 'created_ms' | 'stdin' | 'producer'>;

/** A request checked and with every default filled (SPEC-2): what `enqueue` publishes. */
export interface NormalizedRequest {
  /** Every member SPEC-2 requires, defaults filled, in the order of the table of spec/spec-record.md. */
  fields: SpecFields;
  /** The job's standard input, or null when the job has none (the spec's `stdin` is then null). */
  stdin: Buffer | null;
}

/** Where the defaults of a request come from (spec/spec-record.md). */
export interface NormalizeOptions {
  /** The producer's working directory: the default `cwd` (spec/spec-record.md). Defaults to process.cwd(). */
  cwd?: string;
  /** Standard input given as bytes instead of stdin_text/stdin_base64 (the CLI's --stdin). */
  stdin?: Uint8Array;
  /** Where the request came from, for messages ("batch line 3", a file name). */
  source?: string;
  /**
   * How a refusal names the member it refused (a JSON pointer such as
   * "/env/FSJOB_X"), when the request was made from something else: the
   * CLI names the flag that set it ("--env (FSJOB_X)", requestOptionNamed).
   * Undefined keeps "<source> is not a valid request ... at <pointer>".
   * The pointer is the error's `field` either way.
   */
  nameField?: (field: string) => string | undefined;
}

/**
 * NormalizeOptions (and EnqueueOptions, which adds `clock`) as a JavaScript
 * caller may pass them (base/option-checks.ts): a cwd that is not a string,
 * or stdin given as a string, would fail deep inside as a TypeError.
 */
export function checkNormalizeOptions(options: unknown, caller: string): void {
  checkOptionsObject(options, caller);
  if (options === undefined) return;
  checkString(options, caller, 'cwd');
  checkBytes(options, caller, 'stdin');
  checkString(options, caller, 'source');
  checkFunction(options, caller, 'nameField');
  checkMethods(options, caller, 'clock', ['nowMs', 'sleep']);
}

/**
 * PREEMPT-2: a preemptible job runs in slot 1 of its lane only, so
 * `lane_slots` above 1 beside `preemptible` true is refused. The schema says
 * of it only that lane_slots "must be 1"; this names both members (the
 * CLI's options, through nameField) and why. Undefined for any other
 * refusal. Looked at only once the request failed its check.
 */
function preemptibleSlots(field: string | undefined, bytes: Uint8Array, source: string, nameField?: (field: string) => string | undefined): FsjobError | undefined {
  if (field !== '/lane_slots') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
  } catch {
    return undefined;
  }
  const request = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const slots = request['lane_slots'];
  if (request['preemptible'] !== true || typeof slots !== 'number' || !Number.isInteger(slots) || slots < 2 || slots > SLOTS_MAX) return undefined;
  const [slotsName, preemptibleName] = [nameField?.('/lane_slots'), nameField?.('/preemptible')];
  const what = slotsName !== undefined && preemptibleName !== undefined ? `${slotsName} ${slots} with ${preemptibleName}` : `${source}: lane_slots ${slots} with preemptible true`;
  const drop = preemptibleName ?? 'preemptible';
  return new FsjobError(
    'USAGE',
    `${what}: a preemptible job runs in slot 1 of its lane only, the slot it gives up to a waiting job of the lane (PREEMPT-1, PREEMPT-2), so it cannot take ${slots} slots; drop ${drop} to run in up to ${slots} slots, or ${slotsName ?? 'lane_slots'} to stay preemptible (ENQ-1)`,
    { clause: 'PREEMPT-2', field: '/lane_slots' },
  );
}

/** The first error finding as an FsjobError: UNSUPPORTED_VERSION for VER-1, USAGE otherwise (ENQ-1); the member it refused is its `field`. */
function refusal(findings: readonly Finding[], source: string, bytes: Uint8Array, nameField?: (field: string) => string | undefined): FsjobError {
  const errors = findings.filter((finding) => finding.severity === 'error');
  const first = errors[0];
  if (first === undefined) return new FsjobError('USAGE', `${source}: not a valid request (ENQ-1)`, { clause: 'ENQ-1' });
  const field = first.field === undefined || first.field === '' ? undefined : first.field;
  const slots = preemptibleSlots(field, bytes, source, nameField);
  if (slots !== undefined) return slots;
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more problem${errors.length > 2 ? 's' : ''}; fsjob validate --type request shows them all)` : '';
  const code = first.code === 'RECORD_VERSION' ? 'UNSUPPORTED_VERSION' : 'USAGE';
  const named = field === undefined ? undefined : nameField?.(field);
  const message =
    named !== undefined
      ? `${named}: ${first.message}${more} (ENQ-1, ${first.clause})`
      : `${source} is not a valid request (ENQ-1, ${first.clause})${field === undefined ? '' : ` at ${field}`}: ${first.message}${more}`;
  return new FsjobError(code, message, {
    clause: first.clause,
    ...(field === undefined ? {} : { field }),
    ...(first.path !== '-' ? { path: first.path } : {}),
  });
}

/**
 * REQ-1: check the bytes of a request (a request file or one batch line) and
 * return it. Throws USAGE (UNSUPPORTED_VERSION for another major) naming the
 * first problem; nothing is written.
 */
export function parseRequest(bytes: Uint8Array, options: { source?: string; path?: string; nameField?: (field: string) => string | undefined } = {}): JobRequest {
  const source = options.source ?? options.path ?? 'the request';
  const inspection = inspectRecord('request', bytes, { path: options.path ?? '-' });
  if (!inspection.ok) throw refusal(inspection.findings, source, bytes, options.nameField);
  return inspection.value;
}

/** The full check (ENQ-1) of a request given as a value (not bytes), as parseRequest checks bytes: what normalizeRequest falls back to when plainRequest declines. */
export function checkRequestValue(request: unknown, source: string, nameField?: (field: string) => string | undefined): JobRequest {
  if (typeof request !== 'object' || request === null || Array.isArray(request)) {
    throw new FsjobError('USAGE', `${source} must be a JSON object (REQ-1), not ${Array.isArray(request) ? 'an array' : request === null ? 'null' : `a ${typeof request}`}`, {
      clause: 'REQ-1',
    });
  }
  const illFormed = illFormedMember(request);
  if (illFormed !== undefined) {
    throw new FsjobError('USAGE', `${source}: ${illFormed} holds a lone surrogate, which has no UTF-8 form (SPEC-3); pass an argument or environment value that is not UTF-8 as its bytes: {"base64": ...} (textOfBytes)`, {
      clause: 'SPEC-3',
    });
  }
  let text: string;
  try {
    // A payload kept as written (RawJson, REQ-2) stays so through the bytes.
    text = stringifyKeepingRaw(request);
  } catch (error) {
    throw new FsjobError('USAGE', `${source} cannot be written as JSON (REQ-1): ${error instanceof Error ? error.message : String(error)}`, { clause: 'REQ-1' });
  }
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length > REQUEST_MAX) {
    throw new FsjobError('TOO_LARGE', `${source} is ${bytes.length} bytes as JSON, over REQUEST_MAX (${REQUEST_MAX}, REQ-1); pass large stdin as bytes`, {
      clause: 'REQ-1',
    });
  }
  return parseRequest(bytes, { source, ...(nameField === undefined ? {} : { nameField }) });
}

function decodeStdin(request: JobRequest, given: Uint8Array | undefined, source: string): Buffer | null {
  const inRequest = request.stdin_text !== undefined || request.stdin_base64 !== undefined;
  if (given !== undefined && inRequest) {
    throw new FsjobError('USAGE', `${source} has stdin_text or stdin_base64 and stdin bytes were given too; give the job's standard input once (REQ-1)`, {
      clause: 'REQ-1',
    });
  }
  let bytes: Buffer | null = null;
  if (given !== undefined) bytes = Buffer.from(given.buffer, given.byteOffset, given.byteLength);
  else if (request.stdin_text !== undefined) bytes = Buffer.from(request.stdin_text, 'utf8');
  else if (request.stdin_base64 !== undefined) bytes = Buffer.from(request.stdin_base64, 'base64');
  if (bytes !== null && bytes.length > STDIN_MAX) {
    throw new FsjobError('TOO_LARGE', `the standard input of ${source} is ${bytes.length} bytes, over STDIN_MAX (${STDIN_MAX}, REQ-1); pass a file the command reads instead`, {
      clause: 'REQ-1',
    });
  }
  return bytes;
}

/** A copy of a JSON map with own data properties only ("__proto__" stays an ordinary member). */
function copyMap<V>(map: Record<string, V> | undefined): Record<string, V> {
  return map === undefined ? {} : Object.fromEntries(Object.entries(map));
}

/**
 * SPEC-3: a JavaScript string with a lone surrogate has no UTF-8 form (it
 * would be written as U+FFFD, or refused as an escape REC-1 forbids). Name
 * the first such string among the members that hold text, so the refusal
 * says which argument it is and how to pass bytes that are not UTF-8 (a
 * payload is JSON: the request parser refuses such an escape in it, and
 * walking it here could meet a value nested 200,000 deep).
 */
function illFormedMember(request: object): string | undefined {
  const r = request as Record<string, unknown>;
  const texts: [string, unknown][] = [];
  if (Array.isArray(r['argv'])) r['argv'].forEach((arg, i) => texts.push([`argv[${i}]`, arg]));
  for (const map of ['env', 'labels'] as const) {
    const value = r[map];
    if (typeof value === 'object' && value !== null) for (const [name, inner] of Object.entries(value)) texts.push([`${map} name ${JSON.stringify(name)}`, name], [`${map}.${name}`, inner]);
  }
  for (const member of ['cwd', 'lane', 'dedupe', 'handler', 'stdin_text']) texts.push([member, r[member]]);
  return texts.find(([, value]) => typeof value === 'string' && !isWellFormed(value))?.[0];
}

/**
 * ENQ-1 and SPEC-2: validate a request against the request schema (through
 * the record layer) and fill every default of spec/spec-record.md. Members the
 * request form does not define are refused (VER-2) unless the request is of a
 * newer minor (VER-3: ignored); `x-` extensions are accepted and not copied
 * into the spec (VER-4: a writer writes only members it defines).
 */
export function normalizeRequest(request: unknown, options: NormalizeOptions = {}): NormalizedRequest {
  checkNormalizeOptions(options, 'normalizeRequest');
  const source = options.source ?? 'the request';
  return normalizeChecked(plainRequest(request) ?? checkRequestValue(request, source, options.nameField), options);
}

/** A payload text this long may not be checked here: the request could pass REQUEST_MAX, which only the full check measures. */
const PLAIN_PAYLOAD_MAX = Math.floor((REQUEST_MAX - 65_536) / 3);

/**
 * The common request, accepted without the full check (ENQ-1): a plain
 * object holding `handler` and a `payload` of plain JSON data, or `argv`
 * of plain strings; `cwd`, `env` and `labels` of plain strings; the
 * integer and boolean members of PLAIN_INTEGERS and `preemptible`; each
 * within its bounds. Returns what parseRequest would
 * make of the request's JSON (the payload kept as written, REQ-2), or
 * undefined for anything else, which the full check (checkRequestValue)
 * then accepts or refuses with its codes and fields. It refuses nothing
 * itself: test/producer/plain-request.test.ts holds its verdicts and values
 * to the full check's over every request of the tests' vectors and
 * mutations of them. What it saves: serializing the request, scanning it
 * back and running the schema interpreter (spec/design-hot-path.md).
 */
export function plainRequest(request: unknown): JobRequest | undefined {
  if (!plainObject(request)) return undefined;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(request)) {
    const value = request[key];
    if (value === undefined) continue; // JSON.stringify leaves the member out
    const taken = key === 'payload' ? plainPayload(value) : key === 'preemptible' ? (typeof value === 'boolean' ? value : undefined) : plainText(key, value);
    if (taken !== undefined) {
      out[key] = taken;
      continue;
    }
    if (key === 'queue_deadline_ms' && value === null) {
      out[key] = null;
      continue;
    }
    const bounds = PLAIN_INTEGERS.get(key);
    if (bounds === undefined || !Number.isInteger(value) || (value as number) < bounds[0] || (value as number) > bounds[1]) return undefined;
    out[key] = value;
  }
  // SPEC-1: exactly one of argv and handler, and no payload beside argv.
  const command = out['argv'] !== undefined;
  return command === (out['handler'] === undefined) && !(command && out['payload'] !== undefined) ? (out as unknown as JobRequest) : undefined;
}

/** The members of text (handler, argv, cwd, env, labels) as the full check takes them, copied; undefined for any other member or value. */
function plainText(key: string, value: unknown): unknown {
  switch (key) {
    case 'handler':
      return typeof value === 'string' && HANDLER.test(value) ? value : undefined;
    case 'cwd':
      return plainString(value, 4096) && value.startsWith('/') ? value : undefined;
    case 'argv': {
      // common.schema.json#/$defs/argv: 1 to 4096 strings, argv[0] 1 to 4096 bytes, the others at most 131072 (bytes given as {"base64"} take the full check).
      if (!Array.isArray(value) || 'toJSON' in value || value.length < 1 || value.length > 4096) return undefined;
      const argv: string[] = [];
      for (let i = 0; i < value.length; i++) {
        const arg: unknown = value[i];
        if (!plainString(arg, i === 0 ? 4096 : 131_072) || (i === 0 && arg === '')) return undefined;
        argv.push(arg);
      }
      return argv;
    }
    case 'env':
      return plainMap(value, ENV_NAME, 32_768, 256);
    case 'labels':
      return plainMap(value, LABEL_NAME, 256, 64);
    default:
      return undefined;
  }
}

/** A payload of plain JSON data as the request parser keeps it (RawJson: its text and the value read back), or undefined. */
function plainPayload(value: unknown): RawJson | undefined {
  if (!plainData(value, 2)) return undefined;
  const text = JSON.stringify(value);
  if (text.length > PLAIN_PAYLOAD_MAX || LONE_SURROGATE_ESCAPE.test(text)) return undefined;
  return new RawJson(text, JSON.parse(text) as JsonValue);
}

/**
 * Plain JSON data nesting within NEST_MAX when its outermost object or
 * array is at `depth` (the request is 1, REC-1): strings, numbers,
 * booleans, null, arrays and objects of them. No RawJson (whose text the
 * full check keeps) and no other toJSON (which could return one); no bigint (JSON.stringify throws); no undefined, function or symbol
 * (left out or written null: declined to keep this simple).
 */
function plainData(value: unknown, depth: number): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number': // NaN and the infinities are written null, by both paths
      return true;
    case 'object': {
      if (value === null) return true;
      if (depth > NEST_MAX) return false;
      if (Array.isArray(value)) {
        if ('toJSON' in value) return false;
        for (let i = 0; i < value.length; i++) if (!plainData(value[i], depth + 1)) return false;
        return true;
      }
      if (!plainObject(value)) return false;
      for (const key of Object.keys(value)) if (!plainData(value[key], depth + 1)) return false;
      return true;
    }
    default:
      return false;
  }
}

/** normalizeRequest for a request that parseRequest already checked. */
export function normalizeChecked(request: JobRequest, options: NormalizeOptions = {}): NormalizedRequest {
  const source = options.source ?? 'the request';
  const stdin = decodeStdin(request, options.stdin, source);
  const cwd = request.cwd ?? path.resolve(options.cwd ?? process.cwd());
  // SPEC-1 (checked by the schema): exactly one of argv and handler. The
  // members are added one by one in the table's order: an object literal
  // with conditional spreads cost several µs per job.
  const fields = (request.argv !== undefined ? { argv: [...request.argv] } : { handler: request.handler as string, payload: (request.payload ?? null) as JsonValue }) as SpecFields;
  fields.cwd = cwd;
  fields.env = copyMap(request.env);
  fields.timeout_ms = request.timeout_ms ?? TIMEOUT_DEFAULT;
  fields.kill_grace_ms = request.kill_grace_ms ?? KILL_GRACE_DEFAULT;
  fields.queue_deadline_ms = request.queue_deadline_ms ?? null;
  fields.max_attempts = request.max_attempts ?? 1;
  fields.retry_delay_ms = request.retry_delay_ms ?? 0;
  fields.priority = request.priority ?? 0;
  fields.lane = request.lane ?? null;
  fields.dedupe = request.dedupe ?? null;
  fields.preemptible = request.preemptible ?? false;
  fields.max_output_bytes = request.max_output_bytes ?? OUTPUT_DEFAULT;
  // SPEC-2: the members added after 1.0 are written only when they say
  // something, so a job that uses none stays a record any older reader takes.
  if (request.output_keep !== undefined && request.output_keep !== 'head') fields.output_keep = request.output_keep;
  if (request.not_before_ms !== undefined && request.not_before_ms !== null) fields.not_before_ms = request.not_before_ms;
  // SPEC-2: the members 1.2 added, likewise only when they say something.
  if (request.lane_slots !== undefined && request.lane_slots !== 1) fields.lane_slots = request.lane_slots;
  if (request.after !== undefined) fields.after = request.after.map((dependency) => ({ job_id: dependency.job_id, when: dependency.when ?? 'succeeded' }));
  if (request.hold === true) fields.hold = true;
  fields.labels = copyMap(request.labels);
  return { fields, stdin };
}

/**
 * The spec record of a normalized request (SPEC-2: every member present, in
 * the order of the table of spec/spec-record.md): what enqueue publishes, and what
 * every sample job of the tests, the benchmarks and conformance staging is
 * made from (conformance/runner/fixtures.ts), so the defaults live here only.
 */
export function specFromRequest(id: string, createdMs: number, normalized: NormalizedRequest, producer: SpecRecord['producer']): SpecRecord {
  const { argv, handler, payload, cwd, env, ...limits } = normalized.fields;
  const job = argv !== undefined ? { argv } : { handler: handler as string, payload: payload ?? null };
  const stdin = normalized.stdin === null ? null : { bytes: normalized.stdin.length, sha256: createHash('sha256').update(normalized.stdin).digest('hex') };
  // VER-4: every record this writer publishes says 1.2, whether or not it uses a member added since 1.0 (SPEC-2).
  return { fsjob: PROTOCOL_VERSION, type: 'spec', id, created_ms: createdMs, ...job, cwd, env, stdin, ...limits, producer };
}
