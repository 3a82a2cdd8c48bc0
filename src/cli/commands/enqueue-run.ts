/**
 * What `fsjob enqueue` does once its options are parsed (commands/enqueue.ts
 * declares them): the producer is loaded here, when a job is enqueued, so
 * `fsjob enqueue --help` loads no queue code. The flags go to the producer
 * as they are (requestFromOptions makes the request, enqueue does
 * everything else); this module reads the files named, prints, and checks
 * the one thing only the command line shows: whether the shell split what
 * the user meant as one value or one command.
 */
import { REQUEST_MAX, STDIN_MAX } from '../../base/constants.ts';
import { FsjobError, isFsjobError } from '../../base/errors.ts';
import { formatDuration, isDurationUnit, parseDuration } from '../../base/units.ts';
import { unsatisfiable } from '../../model/gates.ts';
import type { Queue } from '../../model/queue.ts';
import { JOB_ID_PATTERN } from '../../records/names.ts';
import { enqueue, type Enqueued } from '../../producer/enqueue.ts';
import { enqueueBatch, type BatchResult } from '../../producer/many.ts';
import { REQUEST_OPTION_NAMES, commandWarnings, requestFromOptions, requestOptionNamed } from '../../producer/request-options.ts';
import type { CliIo } from '../command.ts';
import { EXIT } from '../exit.ts';
import { linesOf, readInput } from '../input.ts';
import { progressWanted, startProgress } from '../progress.ts';
import { openQueueOf, resolveJobId } from '../queue-arg.ts';
import { environmentValue, requireText, textOf, workingDirectory } from '../command-line.ts';
import type { RecordText } from '../../records/bytes.ts';
import type { JobRequest } from '../../records/codec.ts';

/** Options whose value is a duration: "--delay 2 hours" leaves "hours" to the command. */
const DURATION_OPTIONS = ['timeout', 'queue-deadline', 'retry-delay', 'delay', 'kill-grace'] as const;

/** The command: positionals before `--` and everything after it (yargs puts those in `_`), each as the bytes given (SPEC-3). */
function commandOf(args: Record<string, unknown>): RecordText[] {
  return [...positionalsOf(args), ...((args['_'] as unknown[] | undefined) ?? []).slice(1).map(String)].map((arg, i) => textOf(arg, `argument ${i} of the command`));
}

/** The words given before `--` that yargs took as the command. */
function positionalsOf(args: Record<string, unknown>): string[] {
  return ((args['cmd'] as unknown[] | undefined) ?? []).map(String);
}

/**
 * `--delay 2 hours -- true`: the shell passed "2" to --delay and "hours"
 * became the job's command. A duration is one argument ("2h", or quoted:
 * --delay "2 hours"), so a bare number followed by a unit word is refused
 * rather than enqueued as a job that runs `hours`.
 */
function checkSplitDuration(args: Record<string, unknown>): void {
  const [next] = positionalsOf(args);
  if (next === undefined || !isDurationUnit(next)) return;
  for (const option of DURATION_OPTIONS) {
    const value = args[option];
    if (typeof value === 'string' && /^[0-9]+(\.[0-9]+)?$/.test(value.trim())) {
      const meant = formatDuration(parseDuration(`${value.trim()} ${next}`, option));
      throw new FsjobError('USAGE', `--${option} ${value} ${next}: the shell split the duration, and "${next}" would be the job's command; write --${option} ${meant}, or quote it: --${option} "${value} ${next}"`);
    }
  }
}

function printBatchResult(result: BatchResult, json: boolean, io: CliIo): void {
  if (json) {
    const line = 'id' in result ? { line: result.line, id: result.id } : { line: result.line, error: result.error.toJSON() };
    io.stdout(`${JSON.stringify(line)}\n`);
    if ('error' in result) io.stderr(`fsjob: line ${result.line}: ${result.error.message}\n`);
    return;
  }
  if ('id' in result) io.stdout(`${result.id}\n`);
  else io.stderr(`fsjob: line ${result.line}: ${result.error.message}\n`);
}

/** Runs `fsjob enqueue` with yargs' parsed arguments; resolves to the exit status. */
export async function runEnqueue(args: Record<string, unknown>, io: CliIo): Promise<number> {
  const json = args['json'] === true;
  const requestFile = args['request'] as string | undefined;
  const batchFile = args['batch'] as string | undefined;
  const argv = commandOf(args);
  if (requestFile !== undefined || batchFile !== undefined) {
    const given = REQUEST_OPTION_NAMES.filter((option) => args[option] !== undefined).map((option) => `--${option}`);
    if (argv.length > 0 || given.length > 0) {
      throw new FsjobError('USAGE', `--request and --batch take every job option from the request; drop ${[...given, ...(argv.length > 0 ? ['the command'] : [])].join(', ')}`);
    }
  } else checkSplitDuration(args);
  const queue = await openQueueOf(args);
  if (batchFile !== undefined) {
    const progress = startProgress(io, 'enqueue --batch', 'jobs', progressWanted(io, args));
    try {
      const results = await enqueueBatch(queue, linesOf(batchFile), {
        onResult: (result) => {
          progress.add();
          printBatchResult(result, json, progress.io);
        },
      });
      return results.every((result) => 'id' in result) ? EXIT.OK : EXIT.FAILURE;
    } finally {
      progress.end();
    }
  }
  let enqueued: Enqueued;
  try {
    enqueued = await enqueueOne(queue, args, requestFile, argv);
  } catch (error) {
    throw asInvalidRequest(error);
  }
  if (requestFile === undefined) for (const warning of await commandWarnings(enqueued.spec, queue.root)) io.stderr(`fsjob: warning: ${warning}\n`);
  // AFTER-3: accepted (the dependency exists, AFTER-2), but it will be cancelled unrun: said now, not found out later.
  if (enqueued.gated) for (const warning of await unsatisfiable(queue, enqueued.spec)) io.stderr(`fsjob: warning: ${warning}\n`);
  io.stdout(json ? `${JSON.stringify(enqueued.spec)}\n` : `${enqueued.id}\n`);
  return EXIT.OK;
}

/**
 * The CLI contract gives an invalid request exit 2. The producer reports a
 * request over REQUEST_MAX or a stdin over STDIN_MAX as TOO_LARGE (REQ-1) and
 * a request of another major as UNSUPPORTED_VERSION: in enqueue both can only
 * be the request's fault (the queue was opened before), so they become USAGE.
 */
function asInvalidRequest(error: unknown): unknown {
  if (isFsjobError(error, 'UNSUPPORTED_VERSION') || (isFsjobError(error, 'TOO_LARGE') && error.clause === 'REQ-1')) {
    return new FsjobError('USAGE', error.message, {
      clause: error.clause,
      ...(error.path === undefined ? {} : { path: error.path }),
      ...(error.field === undefined ? {} : { field: error.field }),
      cause: error,
    });
  }
  return error;
}

/** One job from --request FILE, or from the flags and the command (a refusal names the flag that set the member refused). */
async function enqueueOne(queue: Queue, args: Record<string, unknown>, requestFile: string | undefined, argv: RecordText[]): Promise<Enqueued> {
  if (requestFile !== undefined) {
    const bytes = await readInput(requestFile, REQUEST_MAX, 'request file');
    return enqueue(queue, bytes, { source: requestFile === '-' ? 'the request on standard input' : requestFile });
  }
  const request = requestFromOptions(args, argv, { environment: environmentValue, text: textOf, requireText, cwd: workingDirectory });
  if (request.after !== undefined) request.after = await resolvedAfter(queue, request.after);
  const stdinFile = args['stdin'] as string | undefined;
  const stdin = stdinFile === undefined ? undefined : await readInput(stdinFile, STDIN_MAX, '--stdin');
  return enqueue(queue, request, { nameField: requestOptionNamed, ...(stdin === undefined ? {} : { stdin }) });
}

/**
 * --after's ids as typed, each a whole id or a unique prefix of one in this
 * queue (resolveJobId); a refusal keeps the dependency it is about as its
 * `field` (/after/N/job_id).
 */
async function resolvedAfter(queue: Queue, after: NonNullable<JobRequest['after']>): Promise<NonNullable<JobRequest['after']>> {
  const resolved: NonNullable<JobRequest['after']> = [];
  for (const [index, dependency] of after.entries()) {
    if (JOB_ID_PATTERN.test(dependency.job_id)) {
      resolved.push(dependency);
      continue;
    }
    try {
      resolved.push({ ...dependency, job_id: await resolveJobId(queue, dependency.job_id) });
    } catch (error) {
      if (!isFsjobError(error)) throw error;
      throw new FsjobError(error.code, `--after: ${error.message}`, {
        ...(error.clause === undefined ? {} : { clause: error.clause }),
        ...(error.path === undefined ? {} : { path: error.path }),
        field: `/after/${index}/job_id`,
        cause: error,
      });
    }
  }
  return resolved;
}
