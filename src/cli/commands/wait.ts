/**
 * `fsjob wait ID...|-|--all|--lane L|--label K=V [--timeout S] [--json]`:
 * block until the jobs have receipts, printing each as it finishes; exit with
 * the job's exit code (EXEC-10), for many jobs the summary's (summaryExitCode).
 */
import { FsjobError } from '../../base/errors.ts';
import { parseDuration, parsePairs } from '../../base/units.ts';
import type { Queue } from '../../model/queue.ts';
import { unfinishedJobs, type JobSelection } from '../../producer/selection.ts';
import { waitForMany } from '../../producer/wait-many.ts';
import type { ReceiptRecord } from '../../records/codec.ts';
import type { CliIo, FsjobCommand } from '../command.ts';
import { EXIT } from '../exit.ts';
import { linesOf } from '../input.ts';
import { withoutClauseIds } from '../messages.ts';
import { STDIN_POSITIONAL } from '../command-line.ts';
import { openQueueOf, resolveJobId, withQueue } from '../queue-arg.ts';

/** A line of standard input longer than this is not an id nor enqueue's JSON of one. */
const LINE_MAX = 64 * 1024;

/**
 * The id on one line of what `fsjob enqueue` printed: the id alone (plain
 * enqueue and --batch), or its JSON (`--json`: the spec record's job_id;
 * `--batch --json`: {line, id}); undefined for an empty line or a batch line
 * that was refused (enqueue reported it, and there is no job to wait for).
 */
function idOnLine(line: string, number: number): string | undefined {
  const text = line.trim();
  if (text === '') return undefined;
  if (text.length > LINE_MAX) throw new FsjobError('USAGE', `line ${number} of standard input is over ${LINE_MAX} bytes: not a job id`);
  if (!text.startsWith('{')) return text;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new FsjobError('USAGE', `line ${number} of standard input starts with "{" but is not JSON; give one job id per line, as fsjob enqueue prints them`);
  }
  const record = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const id = record['job_id'] ?? record['id'];
  if (typeof id === 'string') return id;
  if ('error' in record) return undefined;
  throw new FsjobError('USAGE', `line ${number} of standard input is JSON without "job_id" or "id"; give one job id per line, as fsjob enqueue prints them`);
}

/** The ids named, "-" replaced by those read from standard input, each resolved (a unique prefix is enough) and counted once. */
async function namedIds(queue: Queue, typed: string[], io: CliIo): Promise<string[]> {
  const ids = new Set<string>();
  for (const text of typed) {
    if (text !== STDIN_POSITIONAL) {
      ids.add(await resolveJobId(queue, text));
      continue;
    }
    // Typed at a terminal, "-" would wait in silence for input the user did not mean to give.
    if (process.stdin.isTTY === true) io.stderr('fsjob: reading job ids from the terminal, one per line; end with Ctrl-D (or pipe them in: fsjob enqueue ... | fsjob wait -)\n');
    let number = 0;
    for await (const line of linesOf('-')) {
      const id = idOnLine(line, ++number);
      if (id !== undefined) ids.add(await resolveJobId(queue, id));
    }
  }
  return [...ids];
}

function selectionOf(args: Record<string, unknown>): JobSelection | undefined {
  const labels = parsePairs(args['label'], 'label');
  const lane = args['lane'] as string | undefined;
  if (args['all'] !== true && lane === undefined && labels === undefined) return undefined;
  if (args['all'] === true && (lane !== undefined || labels !== undefined)) {
    throw new FsjobError('USAGE', '--all waits for every unfinished job; drop it to wait for those of --lane or --label only');
  }
  return { ...(lane === undefined ? {} : { lane }), ...(labels === undefined ? {} : { labels }) };
}

function receiptLine(receipt: ReceiptRecord): string {
  return `${receipt.job_id} ${receipt.outcome} (exit code ${receipt.exit_code})${receipt.message === null ? '' : `: ${receipt.message}`}\n`;
}

export const waitCommand: FsjobCommand = {
  builder: (yargs) =>
    withQueue(yargs)
      .positional('ids', { describe: 'Job ids as fsjob enqueue printed them, or unique prefixes of them; - reads them from standard input, one per line', type: 'string' })
      .option('all', { describe: 'Wait for every job unfinished when the wait starts (held and blocked ones too: release or cancel a held job, or the wait goes on)', type: 'boolean' })
      .option('lane', { describe: 'Wait for the jobs of this lane unfinished when the wait starts', type: 'string' })
      .option('label', { describe: 'Wait for the jobs with label NAME=VALUE unfinished when the wait starts (repeatable: each must match)', type: 'string' })
      .option('timeout', { describe: 'Give up after this long (seconds, or 30s, 10m, 2h) and exit 75', type: 'string' })
      .option('json', { describe: 'Print each receipt record as one line of JSON as its job finishes', type: 'boolean', default: false })
      .example('$0 wait $id', 'block until the job is finished; $? is its exit code')
      .example('$0 wait --timeout 5m $id || echo "failed or still running: $?"', 'bounded wait')
      .example('$0 wait $a $b $c', 'wait for all three; exit 0 only when each succeeded')
      .example('$0 enqueue --batch jobs.txt | $0 wait -', 'wait for exactly the jobs just enqueued')
      .example('$0 wait --all', 'until everything in the queue now has finished')
      .example('$0 wait --lane render --label batch=42', 'the unfinished jobs of lane render labelled batch=42')
      .example('$0 wait --json --all | jq -r "select(.outcome != \\"succeeded\\") | .job_id"', 'the jobs that did not succeed, as they finish')
      .epilog(
        'Each job gets one line as it finishes (with --json: its receipt record, one JSON object per line); jobs finished already come first. ' +
          '--all, --lane and --label wait for the jobs without a receipt when the wait starts: jobs enqueued later are not waited for, jobs finished before are not reported ' +
          '(fsjob status --label NAME=VALUE --status failed lists those); to wait for exactly the jobs you enqueue, pipe their ids in: fsjob enqueue ... | fsjob wait -. ' +
          "Exit status when every job finished: for one job its exit_code (EXEC-10): the command's own status for succeeded (0) and failed, " +
          '124 timed out or expired, 125 lost, 126 rejected, 130 cancelled, 137 force-stopped. ' +
          'For several jobs: 0 only when every one succeeded, else the exit code of the first that did not, in the order named or read (by --all, --lane, --label: enqueue order), whatever order they finished in. ' +
          'No job to wait for (nothing unfinished matches): 0, and a message on stderr. ' +
          'When --timeout elapses first: 75, and a message says which jobs are still unfinished. ' +
          'While a job waits and no live worker serves the queue, a message on stderr says so. ' +
          "fsjob's own failures: 2 usage, 4 no such job, 1 anything else. These overlap a command's own codes; --json prints the receipts when it matters.",
      ),
  run: async (args, io) => {
    const queue = await openQueueOf(args);
    const typed = ((args['ids'] as unknown[] | undefined) ?? []).map(String);
    const selection = selectionOf(args);
    if (selection !== undefined && typed.length > 0) throw new FsjobError('USAGE', 'name job ids or select them with --all, --lane or --label, not both');
    if (selection === undefined && typed.length === 0) throw new FsjobError('USAGE', 'name the jobs to wait for: ids, - to read ids from standard input, or --all, --lane L, --label NAME=VALUE');
    const ids = selection === undefined ? await namedIds(queue, typed, io) : await unfinishedJobs(queue, selection);
    if (ids.length === 0) {
      io.stderr(`fsjob: no job to wait for (${selection === undefined ? 'standard input named none' : 'no unfinished job matches'})\n`);
      return EXIT.OK;
    }
    const timeoutMs = args['timeout'] === undefined ? undefined : parseDuration(args['timeout'], 'timeout');
    const json = args['json'] === true;
    const result = await waitForMany(queue, ids, {
      unservedNotice: io.stderr,
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
      onReceipt: (receipt) => {
        if (json) io.stdout(`${JSON.stringify(receipt)}\n`);
        else io.stdout(args['verbose'] === true ? receiptLine(receipt) : withoutClauseIds(receiptLine(receipt)));
      },
    });
    return result.exitCode;
  },
};
