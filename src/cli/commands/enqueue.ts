/**
 * `fsjob enqueue [options] -- CMD [ARG...]`, `--handler NAME --payload JSON`,
 * `--request FILE` (the conformance `produce` role) and `--batch FILE|-`.
 * Flags become a request (REQ-1); src/producer does everything else.
 */
import { access, constants as fsConstants, stat } from 'node:fs/promises';
import path from 'node:path';
import { FsjobError, isFsjobError } from '../../base/errors.ts';
import { ATTEMPTS_MAX, DEFAULT_COMMAND_PATH, DELAY_MAX, OUTPUT_MAX, QUEUE_DEADLINE_MAX, SLOTS_MAX, STDIN_MAX, TIMEOUT_MAX } from '../../base/constants.ts';
import type { JobRequest } from '../../records/codec.ts';
import type { BatchResult, Enqueued, Queue } from '../../producer/index.ts';
import type { FsjobCommand } from '../command.ts';
import { EXIT } from '../exit.ts';
import { linesOf, readInput } from '../input.ts';
import { openQueueOf, producer, resolveJobId, withQueue } from '../queue-arg.ts';
import { parseBytes, parseDuration, parseInteger, parsePairs, type Bounds } from '../units.ts';
import { parsePayloadText } from '../../records/json.ts';
import { environmentValue, requireText, textOf, workingDirectory } from '../command-line.ts';
import { isPlainText, type RecordText } from '../../records/bytes.ts';

/** Flags that describe one job; --request and --batch carry these in the request instead. */
const JOB_FLAGS = [
  'timeout',
  'queue-deadline',
  'max-attempts',
  'retry-delay',
  'lane',
  'dedupe',
  'priority',
  'stdin',
  'env',
  'cwd',
  'label',
  'max-output',
  'kill-grace',
  'preemptible',
  'handler',
  'payload',
  'delay',
  'at',
  'output-keep',
  'after',
  'hold',
  'lane-slots',
] as const;

/** The limits of spec/spec-record.md, per flag, so that a refusal names the flag and says "at most 7d". */
const LIMITS: Record<string, Bounds> = {
  timeout: { min: 1, max: TIMEOUT_MAX },
  'kill-grace': { min: 0, max: 300_000 },
  'queue-deadline': { min: 1, max: QUEUE_DEADLINE_MAX },
  'max-attempts': { min: 1, max: ATTEMPTS_MAX },
  'retry-delay': { min: 0, max: 86_400_000 },
  priority: { min: -1000, max: 1000 },
  'max-output': { min: 0, max: OUTPUT_MAX },
};

/** Request members and the flag that sets each, to name the flag when the schema refuses a value. */
const FLAG_OF: Record<string, string> = {
  argv: 'the command', cwd: '--cwd', env: '--env', timeout_ms: '--timeout', kill_grace_ms: '--kill-grace', queue_deadline_ms: '--queue-deadline',
  max_attempts: '--max-attempts', retry_delay_ms: '--retry-delay', priority: '--priority', lane: '--lane', dedupe: '--dedupe',
  max_output_bytes: '--max-output', labels: '--label', handler: '--handler', payload: '--payload', output_keep: '--output-keep', not_before_ms: '--delay/--at',
  after: '--after', hold: '--hold', lane_slots: '--lane-slots',
};

/**
 * The producer names the request member it refused ("the request is not a
 * valid request (...) at /env/FSJOB_X: ..."); the operator typed a flag.
 */
function inFlagTerms(error: unknown): unknown {
  if (!isFsjobError(error, 'USAGE')) return error;
  const match = /^the request is not a valid request \([^)]*\) at \/([a-z_]+)(\S*): (.*)$/s.exec(error.message);
  const flag = match === null ? undefined : FLAG_OF[match[1] as string];
  if (match === null || flag === undefined) return error;
  const where = match[2] === '' ? '' : ` (${decodeURIComponent(match[2] as string).slice(1)})`;
  return new FsjobError('USAGE', `${flag}${where}: ${match[3] as string}`, { ...(error.clause === undefined ? {} : { clause: error.clause }) });
}

/** The command: positionals before `--` and everything after it (yargs puts those in `_`), each as the bytes given (SPEC-3). */
function commandOf(args: Record<string, unknown>): RecordText[] {
  const before = (args['cmd'] as unknown[] | undefined) ?? [];
  const after = ((args['_'] as unknown[] | undefined) ?? []).slice(1);
  return [...before, ...after].map((arg, i) => textOf(String(arg), `argument ${i} of the command`));
}

/** --env pairs, each value as the bytes given (SPEC-3: a value that is not UTF-8 is carried in base64). */
function envOf(args: Record<string, unknown>): JobRequest['env'] {
  const pairs = parsePairs(args['env'], 'env', environmentValue);
  if (pairs === undefined) return undefined;
  return Object.fromEntries(Object.entries(pairs).map(([name, value]) => [requireText(name, `--env ${name}`), textOf(value, `the value of --env ${name}`)]));
}

function requestOf(args: Record<string, unknown>, argv: RecordText[]): JobRequest {
  const request: JobRequest = {};
  const handler = args['handler'];
  if (typeof handler === 'string') {
    if (argv.length > 0) throw new FsjobError('USAGE', 'give either a command (after --) or --handler, not both (SPEC-1)', { clause: 'SPEC-1' });
    request.handler = handler;
    if (args['payload'] !== undefined) {
      // REQ-2: kept as written, number for number.
      const payload = parsePayloadText(String(args['payload']));
      if (typeof payload === 'string') throw new FsjobError('USAGE', `--payload is not one JSON value: ${payload}`);
      request.payload = payload as unknown as JobRequest['payload'];
    }
  } else {
    if (args['payload'] !== undefined) throw new FsjobError('USAGE', '--payload needs --handler: only payload jobs have a payload (SPEC-1)', { clause: 'SPEC-1' });
    if (argv.length === 0) throw new FsjobError('USAGE', 'name the command to run after --, for example: fsjob enqueue -- make test (or use --handler, --request or --batch)');
    request.argv = argv as JobRequest['argv'];
  }
  const duration = (flag: string): number | undefined => (args[flag] === undefined ? undefined : parseDuration(args[flag], flag, LIMITS[flag]));
  const integer = (flag: string): number | undefined => (args[flag] === undefined ? undefined : parseInteger(args[flag], flag, LIMITS[flag]));
  const set = <K extends keyof JobRequest>(key: K, value: JobRequest[K] | undefined): void => {
    if (value !== undefined) request[key] = value;
  };
  if (typeof args['cwd'] === 'string') request.cwd = path.resolve(args['cwd']);
  else request.cwd = workingDirectory();
  set('env', envOf(args));
  set('timeout_ms', duration('timeout'));
  set('kill_grace_ms', duration('kill-grace'));
  set('queue_deadline_ms', duration('queue-deadline'));
  set('max_attempts', integer('max-attempts'));
  set('retry_delay_ms', duration('retry-delay'));
  set('priority', integer('priority'));
  set('lane', args['lane'] as string | undefined);
  set('dedupe', args['dedupe'] as string | undefined);
  if (args['preemptible'] === true) request.preemptible = true;
  set('max_output_bytes', args['max-output'] === undefined ? undefined : parseBytes(args['max-output'], 'max-output', LIMITS['max-output']));
  set('labels', parsePairs(args['label'], 'label'));
  set('output_keep', args['output-keep'] as JobRequest['output_keep']);
  set('not_before_ms', notBeforeOf(args));
  if (args['hold'] === true) request.hold = true;
  if (args['lane-slots'] !== undefined) {
    // LANE-5: slots are a lane's; said here in the flag's terms rather than as the schema's missing member.
    if (request.lane === undefined) throw new FsjobError('USAGE', '--lane-slots needs --lane: the slots are those of a lane (--lane L --lane-slots N)', { clause: 'LANE-5' });
    request.lane_slots = parseInteger(args['lane-slots'], 'lane-slots', { min: 1, max: SLOTS_MAX });
  }
  return request;
}

/**
 * --after ID[:succeeded|:finished] (repeatable, or several ids after one
 * --after as pueue takes them): each a whole id or a unique prefix
 * (resolveJobId), `succeeded` unless it says `finished` (AFTER-1).
 */
async function afterOf(queue: Queue, args: Record<string, unknown>): Promise<JobRequest['after']> {
  const given = args['after'];
  if (given === undefined) return undefined;
  const typed = (Array.isArray(given) ? given : [given]).flatMap((value) => String(value).split(/[\s,]+/)).filter((text) => text !== '');
  if (typed.length === 0) throw new FsjobError('USAGE', '--after needs a job id (ID, ID:succeeded or ID:finished)');
  const after: NonNullable<JobRequest['after']> = [];
  for (const text of typed) {
    const cut = text.lastIndexOf(':');
    const when = cut < 0 ? 'succeeded' : text.slice(cut + 1);
    if (when !== 'succeeded' && when !== 'finished') {
      throw new FsjobError('USAGE', `--after ${text}: say ID, ID:succeeded (the default: run only if it succeeded) or ID:finished (run once it finished, whatever its outcome)`, { clause: 'AFTER-1' });
    }
    after.push({ job_id: await resolveJobId(queue, cut < 0 ? text : text.slice(0, cut)), when });
  }
  return after;
}

/** --delay D or --at TIME as the instant the job may start (DELAY-1); undefined for neither. */
function notBeforeOf(args: Record<string, unknown>): number | undefined {
  const delay = args['delay'];
  const at = args['at'];
  if (delay !== undefined && at !== undefined) throw new FsjobError('USAGE', 'give --delay or --at, not both');
  if (delay !== undefined) {
    const ms = parseDuration(delay, 'delay', { min: 0, max: DELAY_MAX });
    return ms === 0 ? undefined : Date.now() + ms;
  }
  if (at === undefined) return undefined;
  const text = String(at).trim();
  // ISO 8601 ("2026-12-01T18:30", "2026-12-01 18:30:00Z"; local time without a zone) or @<seconds since the epoch>.
  const ms = text.startsWith('@') && /^@[0-9]+$/.test(text) ? Number(text.slice(1)) * 1000 : Date.parse(text.replace(' ', 'T'));
  if (!Number.isSafeInteger(ms)) throw new FsjobError('USAGE', `--at ${JSON.stringify(text)} is not a time; write 2026-12-01T18:30 (local), 2026-12-01T18:30Z, or @1796000000 (seconds since the epoch)`);
  const now = Date.now();
  if (ms <= now) throw new FsjobError('USAGE', `--at ${text} is in the past (${new Date(ms).toISOString()}); a job may start at once without it`);
  if (ms - now > DELAY_MAX) throw new FsjobError('USAGE', `--at ${text} is too far ahead: at most 365d from now`);
  return ms;
}

/** The job is accepted either way; a consumer will reject it (EXEC-5), so say so now. */
async function warnAboutCwd(cwd: string | undefined, root: string, io: Parameters<FsjobCommand['run']>[1]): Promise<void> {
  if (cwd === undefined) return;
  const inside = cwd === root || cwd.startsWith(`${root}/`);
  const isDir = await stat(cwd).then((stats) => stats.isDirectory(), () => false);
  if (inside || !isDir) {
    const why = inside ? 'lies inside the queue' : 'is not a directory here';
    io.stderr(`fsjob: warning: the working directory ${cwd} ${why}; a consumer will reject the job (EXEC-5, cwd_unusable) unless that changes\n`);
  }
}

async function isExecutable(file: string): Promise<boolean> {
  try {
    if (!(await stat(file)).isFile()) return false;
    await access(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Where execvp(3) would find `name` on `searchPath` (an empty entry is the working directory), or undefined. */
async function findOnPath(name: string, searchPath: string, cwd: string): Promise<string | undefined> {
  for (const dir of searchPath.split(':')) {
    const file = path.resolve(cwd, dir === '' ? '.' : dir, name);
    if (await isExecutable(file)) return file;
  }
  return undefined;
}

/**
 * EXEC-4, EXEC-6: the job runs argv[0] on the PATH of its own environment
 * (/usr/local/bin:/usr/bin:/bin unless --env PATH), not this shell's. A name
 * that is not there fails at run time with exit 127, so say so now. The job
 * is accepted either way: the consumer's machine may differ from this one.
 */
async function warnAboutCommand(argv0: string, jobPath: string, cwd: string, io: Parameters<FsjobCommand['run']>[1]): Promise<void> {
  if (argv0.includes('/')) {
    if (!(await isExecutable(path.resolve(cwd, argv0)))) {
      io.stderr(`fsjob: warning: ${argv0} is not an executable file here (from ${cwd}); the job will fail with exit 127 or 126 unless that changes\n`);
    }
    return;
  }
  if ((await findOnPath(argv0, jobPath, cwd)) !== undefined) return;
  const here = await findOnPath(argv0, process.env['PATH'] ?? '', cwd);
  const hint = here === undefined ? '' : `; it is ${here} in this shell: give that path, or pass this shell's PATH with --env PATH`;
  io.stderr(`fsjob: warning: ${argv0} is not on the job's PATH (${jobPath}), so the job will fail with exit 127${hint}\n`);
}

function printBatchResult(result: BatchResult, json: boolean, io: Parameters<FsjobCommand['run']>[1]): void {
  if (json) {
    const line = 'id' in result ? { line: result.line, id: result.id } : { line: result.line, error: result.error.toJSON() };
    io.stdout(`${JSON.stringify(line)}\n`);
    if ('error' in result) io.stderr(`fsjob: line ${result.line}: ${result.error.message}\n`);
    return;
  }
  if ('id' in result) io.stdout(`${result.id}\n`);
  else io.stderr(`fsjob: line ${result.line}: ${result.error.message}\n`);
}

export const enqueueCommand: FsjobCommand = {
  command: 'enqueue [cmd..]',
  describe: 'Publish a job: print its id once it is durable (exit 3 when its dedupe key is held)',
  builder: (yargs) =>
    withQueue(yargs)
      .positional('cmd', { describe: 'The command and its arguments; put them after -- so their options are not read as fsjob options', type: 'string', array: true })
      .option('timeout', { describe: 'Run time limit of one attempt: seconds or 30s, 10m, 2h, 7d (default 1h, max 7d)', type: 'string' })
      .option('queue-deadline', { describe: 'The job must start within this long of being enqueued, else it expires (exit 124); at most 30d', type: 'string' })
      .option('max-attempts', { describe: 'Attempts the job may use, 1 to 100 (default 1: never started twice)', type: 'number' })
      .option('retry-delay', { describe: 'Wait before a retry (default 0, at most 1d)', type: 'string' })
      .option('lane', { describe: 'At most one job of a lane runs at a time (more with --lane-slots)', type: 'string' })
      .option('lane-slots', { describe: 'With --lane: up to N jobs of the lane run at once, this one in any of slots 1 to N (1 to 64; default 1); give every job of the lane the same N', type: 'number' })
      .option('after', { describe: 'Run only after job ID succeeded (ID or ID:succeeded), or finished whatever its outcome (ID:finished); repeatable. If it cannot succeed any more, this job is cancelled (exit 130)', type: 'string', array: true })
      .option('hold', { describe: 'Enqueue the job held: it runs only once released (fsjob release ID), and may be cancelled meanwhile', type: 'boolean' })
      .option('dedupe', { describe: 'At most one unfinished job per key: a second one is refused with exit 3', type: 'string' })
      .option('priority', { describe: 'Higher runs first, -1000 to 1000 (default 0); negative values as --priority=-5', type: 'number' })
      .option('stdin', { describe: "The job's standard input: a file, or - for this command's standard input (at most 64 MiB)", type: 'string' })
      .option('env', { describe: "Extra environment NAME=VALUE, or NAME to pass this shell's value (repeatable); the command gets only PATH (/usr/local/bin:/usr/bin:/bin unless --env PATH), HOME, FSJOB_* and these", type: 'string' })
      .option('cwd', { describe: 'Working directory of the command (default: the current directory)', type: 'string' })
      .option('label', { describe: 'Informational label NAME=VALUE (repeatable)', type: 'string' })
      .option('max-output', { describe: 'Bytes kept per output stream: 1048576, 64k, 1M (default 1M, max 64M)', type: 'string' })
      .option('output-keep', { describe: 'Of a longer stream keep the head (default), the tail (where errors usually are) or head_tail (both halves)', choices: ['head', 'tail', 'head_tail'], type: 'string' })
      .option('delay', { describe: 'Do not start before this long from now: 30s, 10m, 2h, 7d (at most 365d)', type: 'string' })
      .option('at', { describe: 'Do not start before this time: 2026-12-01T18:30 (local), 2026-12-01T18:30Z, or @SECONDS since the epoch', type: 'string' })
      .option('kill-grace', { describe: 'TERM-to-KILL grace after the timeout (default 5s, at most 5m)', type: 'string' })
      .option('preemptible', { describe: 'May be stopped (and rerun) for a waiting job of its lane', type: 'boolean' })
      .option('handler', { describe: 'A payload job for the in-process handler NAME instead of a command', type: 'string' })
      .option('payload', { describe: "The handler's input as JSON (default null)", type: 'string' })
      .option('request', { describe: 'Enqueue the request in FILE (schemas/request.schema.json), or - for standard input', type: 'string' })
      .option('batch', { describe: 'Enqueue one request per line of FILE (or - for standard input); prints one id per accepted line, in line order, once the job is durable. Lines are staged together and share their fsyncs, so a batch costs far less per job than a loop of enqueue calls', type: 'string' })
      .option('json', { describe: 'Print the spec record (with --batch: one JSON result per line) instead of the id', type: 'boolean', default: false })
      .conflicts('request', 'batch')
      .example('$0 enqueue -- make -C site publish', 'run a command; prints the job id')
      .example('$0 enqueue --env PATH --env AWS_PROFILE -- ./deploy.sh', "pass this shell's PATH and AWS_PROFILE to the job")
      .example('$0 enqueue --at 2026-12-01T02:00 --output-keep tail -- ./nightly.sh', 'run at 2 am or later; keep the end of its output')
      .example("id=$($0 enqueue --timeout 10m --max-attempts 3 --retry-delay 30s -- ./deploy.sh) && $0 wait $id", 'enqueue, then wait for the outcome')
      .example('$0 enqueue --dedupe nightly-report -- ./report.sh || [ $? -eq 3 ]', 'at most one unfinished report; exit 3 means one is queued already')
      .example('build=$($0 enqueue -- make) && $0 enqueue --after $build -- ./deploy.sh', 'deploy only once the build succeeded')
      .example('$0 enqueue --lane render --lane-slots 3 -- ./render.sh 1', 'at most 3 render jobs at once')
      .example('$0 enqueue --hold -- ./migrate.sh', 'enqueue now, start it later with fsjob release ID')
      .example('printf "%s\\n" \'{"argv":["echo","a"]}\' \'{"argv":["echo","b"]}\' | $0 enqueue --batch -', 'one job per JSON line')
      .example('$0 enqueue --handler resize --payload \'{"w":640}\'', 'a payload job for a consumer that has a "resize" handler')
      .epilog(
        'The id is printed only after the job is durable (ENQ-4). Exit status: 0 accepted, 1 failed (nothing was left behind, ENQ-6), 2 invalid request or options, 3 dedupe key held (DEDUPE-1). ' +
          'With --batch: 0 when every line was accepted, 1 when any line failed (each failure is reported on stderr with its line number; the other lines are enqueued).',
      ),
  // SPEC-3: the command and --env values are carried as the bytes given.
  bytes: ['cmd', '_', 'env'],
  run: async (args, io) => {
    const json = args['json'] === true;
    const requestFile = args['request'] as string | undefined;
    const batchFile = args['batch'] as string | undefined;
    const argv = commandOf(args);
    if (requestFile !== undefined || batchFile !== undefined) {
      const given = JOB_FLAGS.filter((flag) => args[flag] !== undefined).map((flag) => `--${flag}`);
      if (argv.length > 0 || given.length > 0) {
        throw new FsjobError('USAGE', `--request and --batch take every job option from the request; drop ${[...given, ...(argv.length > 0 ? ['the command'] : [])].join(', ')}`);
      }
    }
    const queue = await openQueueOf(args);
    const { enqueueBatch } = await producer();
    if (batchFile !== undefined) {
      const results = await enqueueBatch(queue, linesOf(batchFile), { onResult: (result) => printBatchResult(result, json, io) });
      return results.every((result) => 'id' in result) ? EXIT.OK : EXIT.FAILURE;
    }
    let enqueued;
    try {
      enqueued = await enqueueOne(queue, args, requestFile, argv);
    } catch (error) {
      throw asInvalidRequest(requestFile === undefined ? inFlagTerms(error) : error);
    }
    if (enqueued.spec.argv !== undefined && requestFile === undefined) {
      await warnAboutCwd(enqueued.spec.cwd, queue.root, io);
      const [program] = enqueued.spec.argv;
      const jobPath = enqueued.spec.env['PATH'] ?? DEFAULT_COMMAND_PATH;
      // A program or PATH that is not UTF-8 (SPEC-3) is not looked up here: the warning is only a help.
      if (isPlainText(program) && isPlainText(jobPath)) await warnAboutCommand(program, jobPath, enqueued.spec.cwd, io);
    }
    io.stdout(json ? `${JSON.stringify(enqueued.spec)}\n` : `${enqueued.id}\n`);
    return EXIT.OK;
  },
};

/**
 * The CLI contract gives an invalid request exit 2. The producer reports a
 * request over REQUEST_MAX or a stdin over STDIN_MAX as TOO_LARGE (REQ-1) and
 * a request of another major as UNSUPPORTED_VERSION: in enqueue both can only
 * be the request's fault (the queue was opened before), so they become USAGE.
 */
function asInvalidRequest(error: unknown): unknown {
  if (isFsjobError(error, 'UNSUPPORTED_VERSION') || (isFsjobError(error, 'TOO_LARGE') && error.clause === 'REQ-1')) {
    return new FsjobError('USAGE', error.message, { clause: error.clause, ...(error.path === undefined ? {} : { path: error.path }), cause: error });
  }
  return error;
}

/** One job from --request FILE or from the flags and the command. */
async function enqueueOne(queue: Queue, args: Record<string, unknown>, requestFile: string | undefined, argv: RecordText[]): Promise<Enqueued> {
  const { enqueue } = await producer();
  if (requestFile !== undefined) {
    const { REQUEST_MAX } = await import('../../base/constants.ts');
    const bytes = await readInput(requestFile, REQUEST_MAX, 'request file');
    return enqueue(queue, bytes, { source: requestFile === '-' ? 'the request on standard input' : requestFile });
  }
  const request = requestOf(args, argv);
  const after = await afterOf(queue, args);
  if (after !== undefined) request.after = after;
  const stdinFile = args['stdin'] as string | undefined;
  const stdin = stdinFile === undefined ? undefined : await readInput(stdinFile, STDIN_MAX, '--stdin');
  return enqueue(queue, request, stdin === undefined ? {} : { stdin });
}
