/**
 * A request (section 5.2) from options as a person types them on a command
 * line: `--timeout 10m`, `--max-output 64k`, `--env NAME=VALUE` or `--env
 * NAME`, `--at 2026-12-01T18:30`, `--delay "2 hours"`, `--after
 * ID:finished`. `fsjob enqueue` passes its flags here; the producer validates the result like any request
 * (ENQ-1), and a refusal names the flag that set the member it refused
 * (requestOptionNamed).
 *
 * Each option is checked against the bound section 5.2 gives its member
 * (src/base/constants.ts), so a refusal says "at most 5m" in the option's
 * own unit instead of the member's milliseconds.
 */
// Synchronous: a few stats on a path the shell just gave, and node:fs/promises would cost `fsjob enqueue` its loading (~1.5 ms, issue 29 target 2).
import { accessSync, constants as fsConstants, statSync } from 'node:fs';
import path from 'node:path';
import {
  ATTEMPTS_MAX,
  DEFAULT_COMMAND_PATH,
  DELAY_MAX,
  KILL_GRACE_MAX,
  OUTPUT_MAX,
  PRIORITY_MAX,
  PRIORITY_MIN,
  QUEUE_DEADLINE_MAX,
  RETRY_DELAY_MAX,
  SLOTS_MAX,
  TIMEOUT_MAX,
} from '../base/constants.ts';
import { FsjobError, isFsjobError } from '../base/errors.ts';
import { parseBytes, parseDuration, parseInteger, parsePairs, type Bounds } from '../base/units.ts';
import { isPlainText, type RecordText } from '../records/bytes.ts';
import type { JobRequest, SpecRecord } from '../records/codec.ts';
import { parsePayloadText } from '../records/json.ts';

/** Option values by option name ("timeout", "max-attempts", ...), as a command-line parser gives them. */
export type RequestOptions = Readonly<Record<string, unknown>>;

/** How each option is read, the request member it sets, and the member's bounds (section 5.2) in the option's unit. */
const OPTIONS = {
  timeout: { member: 'timeout_ms', read: 'duration', bounds: { min: 1, max: TIMEOUT_MAX } },
  'kill-grace': { member: 'kill_grace_ms', read: 'duration', bounds: { min: 0, max: KILL_GRACE_MAX } },
  'queue-deadline': { member: 'queue_deadline_ms', read: 'duration', bounds: { min: 1, max: QUEUE_DEADLINE_MAX } },
  'max-attempts': { member: 'max_attempts', read: 'integer', bounds: { min: 1, max: ATTEMPTS_MAX } },
  'retry-delay': { member: 'retry_delay_ms', read: 'duration', bounds: { min: 0, max: RETRY_DELAY_MAX } },
  priority: { member: 'priority', read: 'integer', bounds: { min: PRIORITY_MIN, max: PRIORITY_MAX } },
  'max-output': { member: 'max_output_bytes', read: 'bytes', bounds: { min: 0, max: OUTPUT_MAX } },
  lane: { member: 'lane', read: 'text' },
  'lane-slots': { member: 'lane_slots', read: 'integer', bounds: { min: 1, max: SLOTS_MAX } },
  after: { member: 'after', read: 'dependencies' },
  hold: { member: 'hold', read: 'flag' },
  dedupe: { member: 'dedupe', read: 'text' },
  'output-keep': { member: 'output_keep', read: 'text' },
  cwd: { member: 'cwd', read: 'path' },
  env: { member: 'env', read: 'environment' },
  label: { member: 'labels', read: 'pairs' },
  preemptible: { member: 'preemptible', read: 'flag' },
  handler: { member: 'handler', read: 'text' },
  payload: { member: 'payload', read: 'json' },
  delay: { member: 'not_before_ms', read: 'instant' },
  at: { member: 'not_before_ms', read: 'instant' },
} as const satisfies Record<string, { member: string; read: string; bounds?: Bounds }>;

/** Every option that describes one job (a request file or batch line carries these itself); `stdin` names a file the caller reads. */
export const REQUEST_OPTION_NAMES: readonly string[] = [...Object.keys(OPTIONS), 'stdin'];

/** The flag (and the part of the member below it) that set a request member: "/env/FSJOB_X" is "--env (FSJOB_X)". */
export function requestOptionNamed(field: string): string | undefined {
  const [member = '', ...rest] = field.split('/').slice(1);
  const where = rest.length === 0 ? '' : ` (${rest.map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~')).join('/')})`;
  if (member === 'argv') return `the command${rest.length === 0 ? '' : ` (argument ${Number(rest[0]) + 1})`}`;
  const options = Object.entries(OPTIONS)
    .filter(([, option]) => option.member === member)
    .map(([name]) => `--${name}`);
  return options.length === 0 ? undefined : `${options.join('/')}${where}`;
}

/** Where the defaults of request options come from, and how values that may be bytes become members (SPEC-3). */
export interface RequestOptionsContext {
  /** The value of the variable `--env NAME` passes, or undefined when it is not set. @default process.env[name] */
  environment?: (name: string) => string | undefined;
  /**
   * An --env value as a record holds it: the string, or `{"base64": ...}`
   * for bytes that are not UTF-8 (SPEC-3; the CLI reads the bytes it was
   * given, src/cli/command-line.ts). @default the string
   */
  text?: (value: string, what: string) => RecordText;
  /** A value that must be text (an --env name), refused when it is not. @default the string */
  requireText?: (value: string, what: string) => string;
  /** The job's cwd without --cwd. @default the producer's (its process.cwd()) */
  cwd?: () => string;
  /** The instant `--delay` counts from. @default Date.now() */
  now?: number;
}

/**
 * The request the options describe: `command` (the job's argv, each
 * argument as a record holds it) or `--handler` (with `--payload`), and
 * every job option given. Throws USAGE naming the option for a value it
 * cannot read or that is out of bounds, with the member it would have set
 * as the error's `field`; the producer checks the rest (ENQ-1). `--stdin`
 * is not read here: the caller reads the file and hands the bytes to
 * enqueue. Each `--after` id is kept as typed: a caller that takes unique
 * prefixes (the CLI, resolveJobId) resolves them before enqueue, which
 * refuses anything but a whole id (AFTER-1).
 */
export function requestFromOptions(options: RequestOptions, command: readonly RecordText[], context: RequestOptionsContext = {}): JobRequest {
  const request: JobRequest = {};
  const handler = options['handler'];
  if (typeof handler === 'string') {
    if (command.length > 0) throw new FsjobError('USAGE', 'give either a command (after --) or --handler, not both (SPEC-1)', { clause: 'SPEC-1' });
    request.handler = handler;
    if (options['payload'] !== undefined) {
      // REQ-2: kept as written, number for number (a RawJson, written as its text).
      const payload = parsePayloadText(String(options['payload']));
      if (typeof payload === 'string') throw new FsjobError('USAGE', `--payload is not one JSON value: ${payload}`, { field: '/payload' });
      request.payload = payload as unknown as JobRequest['payload'];
    }
  } else {
    if (options['payload'] !== undefined) throw new FsjobError('USAGE', '--payload needs --handler: only payload jobs have a payload (SPEC-1)', { clause: 'SPEC-1', field: '/payload' });
    if (command.length === 0) throw new FsjobError('USAGE', 'name the command to run after --, for example: fsjob enqueue -- make test (or use --handler, --request or --batch)');
    request.argv = [...command] as JobRequest['argv'];
  }
  const given = (name: keyof typeof OPTIONS): unknown => options[name];
  const set = <K extends keyof JobRequest>(key: K, value: JobRequest[K] | undefined): void => {
    if (value !== undefined) request[key] = value;
  };
  for (const name of ['timeout', 'kill-grace', 'queue-deadline', 'retry-delay'] as const) {
    const option = OPTIONS[name];
    if (given(name) !== undefined) set(option.member, asMember(option.member, () => parseDuration(given(name), name, option.bounds)));
  }
  for (const name of ['max-attempts', 'priority'] as const) {
    const option = OPTIONS[name];
    if (given(name) !== undefined) set(option.member, asMember(option.member, () => parseInteger(given(name), name, option.bounds)));
  }
  if (given('max-output') !== undefined) set('max_output_bytes', asMember('max_output_bytes', () => parseBytes(given('max-output'), 'max-output', OPTIONS['max-output'].bounds)));
  // An empty --cwd (a shell variable that was empty) names no directory: path.resolve would make it this one.
  if (given('cwd') === '') throw new FsjobError('USAGE', '--cwd "" names no directory; give the directory the command runs in, or leave --cwd out for the current one', { field: '/cwd' });
  if (typeof given('cwd') === 'string') request.cwd = path.resolve(given('cwd') as string);
  else if (context.cwd !== undefined) request.cwd = context.cwd();
  set('env', envOf(given('env'), context));
  set('labels', parsePairs(given('label'), 'label'));
  set('lane', given('lane') as string | undefined);
  set('dedupe', given('dedupe') as string | undefined);
  set('output_keep', given('output-keep') as JobRequest['output_keep']);
  if (given('preemptible') === true) request.preemptible = true;
  set('not_before_ms', notBeforeOf(options, context.now ?? Date.now()));
  if (given('lane-slots') !== undefined) {
    // LANE-5: slots are a lane's; said here in the option's terms rather than as the schema's missing member.
    if (request.lane === undefined) throw new FsjobError('USAGE', '--lane-slots needs --lane: the slots are those of a lane (--lane L --lane-slots N)', { clause: 'LANE-5', field: '/lane_slots' });
    set('lane_slots', asMember('lane_slots', () => parseInteger(given('lane-slots'), 'lane-slots', OPTIONS['lane-slots'].bounds)));
  }
  set('after', afterOf(given('after')));
  if (given('hold') === true) request.hold = true;
  return request;
}

/** `read()`, its refusal given the member it would have set (`/lane_slots`) as the error's field. */
function asMember<T>(member: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (!isFsjobError(error) || error.field !== undefined) throw error;
    throw new FsjobError(error.code, error.message, { ...(error.clause === undefined ? {} : { clause: error.clause }), field: `/${member}`, cause: error });
  }
}

/**
 * --after ID[:succeeded|:finished] (repeatable, or several ids in one
 * value, separated by spaces or commas, as pueue takes them): `succeeded`
 * unless it says `finished` (AFTER-1). Each id is kept as typed.
 */
function afterOf(values: unknown): JobRequest['after'] {
  if (values === undefined) return undefined;
  const typed = (Array.isArray(values) ? values : [values]).flatMap((value) => String(value).split(/[\s,]+/)).filter((text) => text !== '');
  if (typed.length === 0) throw new FsjobError('USAGE', '--after needs a job id (ID, ID:succeeded or ID:finished)', { clause: 'AFTER-1', field: '/after' });
  return typed.map((text, index) => {
    const cut = text.lastIndexOf(':');
    const when = cut < 0 ? 'succeeded' : text.slice(cut + 1);
    if (when !== 'succeeded' && when !== 'finished') {
      throw new FsjobError('USAGE', `--after ${text}: say ID, ID:succeeded (the default: run only if it succeeded) or ID:finished (run once it finished, whatever its outcome)`, {
        clause: 'AFTER-1',
        field: `/after/${index}/when`,
      });
    }
    return { job_id: cut < 0 ? text : text.slice(0, cut), when };
  });
}

/** --env pairs: each name text, each value as a record holds it (SPEC-3). */
function envOf(values: unknown, context: RequestOptionsContext): JobRequest['env'] {
  const pairs = parsePairs(values, 'env', context.environment ?? ((name) => process.env[name]));
  if (pairs === undefined) return undefined;
  const text = context.text ?? ((value: string): RecordText => value);
  const name = context.requireText ?? ((value: string): string => value);
  return Object.fromEntries(Object.entries(pairs).map(([key, value]) => [name(key, `--env ${key}`), text(value, `the value of --env ${key}`)]));
}

/** --delay D or --at TIME as the instant the job may start (DELAY-1); undefined for neither. */
function notBeforeOf(options: RequestOptions, now: number): number | undefined {
  const delay = options['delay'];
  const at = options['at'];
  if (delay !== undefined && at !== undefined) throw new FsjobError('USAGE', 'give --delay or --at, not both');
  if (delay !== undefined) {
    const ms = parseDuration(delay, 'delay', { min: 0, max: DELAY_MAX });
    return ms === 0 ? undefined : now + ms;
  }
  if (at === undefined) return undefined;
  const text = String(at).trim();
  // ISO 8601 ("2026-12-01T18:30", "2026-12-01 18:30:00Z"; local time without a zone) or @<seconds since the epoch>.
  const ms = text.startsWith('@') && /^@[0-9]+$/.test(text) ? Number(text.slice(1)) * 1000 : Date.parse(text.replace(' ', 'T'));
  if (!Number.isSafeInteger(ms)) {
    throw new FsjobError('USAGE', `--at ${JSON.stringify(text)} is not a time; write 2026-12-01T18:30 (local), 2026-12-01T18:30Z, or @1796000000 (seconds since the epoch)`, { field: '/not_before_ms' });
  }
  if (ms <= now) throw new FsjobError('USAGE', `--at ${text} is in the past (${new Date(ms).toISOString()}); a job may start at once without it`, { field: '/not_before_ms' });
  if (ms - now > DELAY_MAX) throw new FsjobError('USAGE', `--at ${text} is too far ahead: at most 365d from now`, { field: '/not_before_ms' });
  return ms;
}

function isExecutable(file: string): boolean {
  try {
    if (!statSync(file).isFile()) return false;
    accessSync(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Where execvp(3) would find `name` on `searchPath` (an empty entry is the working directory), or undefined. */
function findOnPath(name: string, searchPath: string, cwd: string): string | undefined {
  for (const dir of searchPath.split(':')) {
    const file = path.resolve(cwd, dir === '' ? '.' : dir, name);
    if (isExecutable(file)) return file;
  }
  return undefined;
}

/**
 * What will make an accepted command job fail on this machine, for the
 * person who enqueued it to hear now: a working directory inside the queue
 * or missing (EXEC-5, cwd_unusable), and a command that is not on the
 * job's PATH (EXEC-4, EXEC-6: /usr/local/bin:/usr/bin:/bin unless the job's
 * env sets PATH, not the enqueuing shell's). The job is accepted either
 * way: the consumer's machine may differ from this one. One sentence each;
 * none for a payload job.
 */
export async function commandWarnings(spec: SpecRecord, queueRoot: string, shellPath: string = process.env['PATH'] ?? ''): Promise<string[]> {
  if (spec.argv === undefined) return [];
  const warnings: string[] = [];
  const { cwd } = spec;
  const inside = cwd === queueRoot || cwd.startsWith(`${queueRoot}/`);
  let isDir = false;
  try {
    isDir = statSync(cwd).isDirectory();
  } catch {
    // missing, unreadable: not a directory the job can use
  }
  if (inside || !isDir) {
    const why = inside ? 'lies inside the queue' : 'is not a directory here';
    warnings.push(`the working directory ${cwd} ${why}; a consumer will reject the job (EXEC-5, cwd_unusable) unless that changes`);
  }
  const [argv0] = spec.argv;
  const jobPath = spec.env['PATH'] ?? DEFAULT_COMMAND_PATH;
  // A program or PATH that is not UTF-8 (SPEC-3) is not looked up here: the warning is only a help.
  if (!isPlainText(argv0) || !isPlainText(jobPath)) return warnings;
  if (argv0.includes('/')) {
    if (!isExecutable(path.resolve(cwd, argv0))) warnings.push(`${argv0} is not an executable file here (from ${cwd}); the job will fail with exit 127 or 126 unless that changes`);
    return warnings;
  }
  if (findOnPath(argv0, jobPath, cwd) !== undefined) return warnings;
  const here = findOnPath(argv0, shellPath, cwd);
  const hint = here === undefined ? '' : `; it is ${here} in this shell: give that path, or pass this shell's PATH with --env PATH`;
  warnings.push(`${argv0} is not on the job's PATH (${jobPath}), so the job will fail with exit 127${hint}`);
  return warnings;
}
