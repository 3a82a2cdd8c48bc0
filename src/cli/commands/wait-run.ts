/** What `fsjob wait` does once its options are parsed (commands/wait.ts declares them). */
import { FsjobError } from '../../base/errors.ts';
import { parseDuration, parsePairs } from '../../base/units.ts';
import type { Queue } from '../../model/queue.ts';
import { unfinishedJobs, type JobSelection } from '../../producer/selection.ts';
import { waitForMany } from '../../producer/wait-many.ts';
import type { ReceiptRecord } from '../../records/codec.ts';
import type { CliIo } from '../command.ts';
import { EXIT } from '../exit.ts';
import { linesOf } from '../input.ts';
import { withoutClauseIds } from '../messages.ts';
import { STDIN_POSITIONAL } from '../command-line.ts';
import { openQueueOf, resolveJobId } from '../queue-arg.ts';

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
  // No job has the lane "" (enqueue refuses it): `--lane "$LANE"` with LANE unset would match nothing and exit 0, a success never earned.
  if (lane === '') throw new FsjobError('USAGE', '--lane was given an empty value; name the lane (enqueue --lane L gave it its name)');
  if (args['all'] !== true && lane === undefined && labels === undefined) return undefined;
  if (args['all'] === true && (lane !== undefined || labels !== undefined)) {
    throw new FsjobError('USAGE', '--all waits for every unfinished job; drop it to wait for those of --lane or --label only');
  }
  return { ...(lane === undefined ? {} : { lane }), ...(labels === undefined ? {} : { labels }) };
}

function receiptLine(receipt: ReceiptRecord): string {
  return `${receipt.job_id} ${receipt.outcome} (exit code ${receipt.exit_code})${receipt.message === null ? '' : `: ${receipt.message}`}\n`;
}

/** Runs `fsjob wait` with yargs' parsed arguments; resolves to the exit status. */
export async function runWait(args: Record<string, unknown>, io: CliIo): Promise<number> {
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
}
