/**
 * `fsjob enqueue [options] -- CMD [ARG...]`, `--handler NAME --payload JSON`,
 * `--request FILE` (the conformance `produce` role) and `--batch FILE|-`.
 * The flags go to the producer as they are (requestFromOptions makes the
 * request, enqueue does everything else); this module reads the files named,
 * prints, and checks the one thing only the command line shows: whether the
 * shell split what the user meant as one value or one command.
 */
import { REQUEST_MAX, STDIN_MAX } from '../../base/constants.ts';
import { FsjobError, isFsjobError } from '../../base/errors.ts';
import { formatDuration, isDurationUnit, parseDuration } from '../../base/units.ts';
import type { Queue } from '../../model/queue.ts';
import { JOB_ID_PATTERN } from '../../records/names.ts';
import { enqueue, type Enqueued } from '../../producer/enqueue.ts';
import { enqueueBatch, type BatchResult } from '../../producer/many.ts';
import { REQUEST_OPTION_NAMES, commandWarnings, requestFromOptions, requestOptionNamed } from '../../producer/request-options.ts';
import type { FsjobCommand } from '../command.ts';
import { EXIT } from '../exit.ts';
import { linesOf, readInput } from '../input.ts';
import { progressWanted, startProgress } from '../progress.ts';
import { openQueueOf, resolveJobId, withQueue } from '../queue-arg.ts';
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
