/**
 * `fsjob enqueue [options] -- CMD [ARG...]`, `--handler NAME --payload JSON`,
 * `--request FILE` (the conformance `produce` role) and `--batch FILE|-`.
 * This module declares its options and help; enqueue-run.ts runs it,
 * loaded only then, so that `fsjob enqueue --help` loads no queue code (the
 * start-up cache, start-cache.ts, holds both in one script).
 */
import type { FsjobCommand } from '../command.ts';
import { withQueue } from '../queue-option.ts';

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
      .option('dedupe', { describe: 'At most one unfinished job per key: a second one is refused with exit 3, naming the holder and its status (--json: job_id, job_status)', type: 'string' })
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
      .option('preemptible', { describe: 'May be stopped (and rerun) for a waiting job of its lane; runs in slot 1 of the lane only, so not with --lane-slots above 1', type: 'boolean' })
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
  run: async (args, io) => (await import('./enqueue-run.ts')).runEnqueue(args, io),
};
