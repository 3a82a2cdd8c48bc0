/** What `fsjob logs` does once its options are parsed (commands/logs.ts declares them). */
import { FsjobError } from '../../base/errors.ts';
import type { Queue } from '../../model/queue.ts';
import type { CliIo } from '../command.ts';
import { EXIT } from '../exit.ts';
import { jobStatus } from '../../producer/inspect.ts';
import { readLogs } from '../../producer/watch.ts';
import { jobIdsOf, openQueueOf } from '../queue-arg.ts';
import { noticeUnserved } from '../../producer/service-notice.ts';

type Stream = 'stdout' | 'stderr';

/** The line that stands where the consumer dropped bytes (EXEC-1: the receipt says truncated). */
export function truncationMarker(dropped: number | null): string {
  return dropped === null ? '[truncated: bytes dropped, how many is unknown]' : `[truncated: ${dropped} bytes dropped]`;
}

/**
 * Everything `logs --json` says about one job's stream (schemas/output/logs.schema.json).
 * The status is read before the bytes: a receipt seen then means every byte
 * was in place (RCPT-2 comes before RCPT-3), so `finished` true comes with
 * the whole output. Read after, a job that finished in between was reported
 * finished beside the part of its output read before.
 */
export async function logsJson(queue: Queue, id: string, stream: Stream): Promise<Record<string, unknown>> {
  const report = await jobStatus(queue, id);
  const parts: Buffer[] = [];
  let gen: number | null = null;
  let dropped: number | null = 0;
  let truncated = false;
  for await (const chunk of readLogs(queue, id, { stream, gaps: true })) {
    gen = chunk.gen;
    if (chunk.dropped !== undefined) {
      truncated = true;
      dropped = chunk.dropped;
    } else parts.push(chunk.bytes);
  }
  const bytes = Buffer.concat(parts);
  const text = new TextDecoder('utf-8', { fatal: true });
  let utf8: string | null;
  try {
    utf8 = text.decode(bytes);
  } catch {
    utf8 = null;
  }
  return {
    job_id: id,
    stream,
    gen,
    status: report.status,
    finished: report.receipt !== null,
    bytes_kept: bytes.length,
    truncated,
    dropped: truncated ? dropped : 0,
    // A job's output need not be UTF-8: base64 carries any bytes, text only when it decodes.
    text: utf8,
    base64: bytes.toString('base64'),
  };
}

async function printLogs(queue: Queue, id: string, stream: Stream, follow: boolean, raw: boolean, io: CliIo): Promise<void> {
  const write = io.stdoutBytes ?? ((bytes: Uint8Array) => io.stdout(Buffer.from(bytes).toString('utf8')));
  let gen: number | undefined;
  let last = 0x0a;
  for await (const chunk of readLogs(queue, id, { stream, follow, gaps: true })) {
    if (follow && gen !== undefined && chunk.gen !== gen) io.stderr(`fsjob: output of generation ${chunk.gen} (a new attempt) follows\n`);
    gen = chunk.gen;
    if (chunk.dropped !== undefined) {
      const marker = truncationMarker(chunk.dropped);
      // --raw keeps standard output exactly the kept bytes; the marker is then a message.
      if (raw) io.stderr(`fsjob: ${id} ${stream}: ${marker}\n`);
      else await write(Buffer.from(`${last === 0x0a ? '' : '\n'}${marker}\n`));
      last = 0x0a;
      continue;
    }
    if (chunk.bytes.length > 0) last = chunk.bytes[chunk.bytes.length - 1] as number;
    await write(chunk.bytes);
  }
}

/** Runs `fsjob logs` with yargs' parsed arguments; resolves to the exit status. */
export async function runLogs(args: Record<string, unknown>, io: CliIo): Promise<number> {
  const queue = await openQueueOf(args);
  const ids = await jobIdsOf(args, queue);
  const stream: Stream = args['stderr'] === true ? 'stderr' : 'stdout';
  const follow = args['follow'] === true;
  if (follow && ids.length > 1) throw new FsjobError('USAGE', `logs --follow takes one job id, not ${ids.length}`);
  if (follow && args['json'] === true) throw new FsjobError('USAGE', 'logs --json prints what is kept so far; it does not --follow');
  if (args['json'] === true) {
    for (const id of ids) io.stdout(`${JSON.stringify(await logsJson(queue, id, stream))}\n`);
    return EXIT.OK;
  }
  const stopNotice = follow ? noticeUnserved(queue, ids, io) : () => undefined;
  try {
    for (const [index, id] of ids.entries()) {
      if (ids.length > 1) io.stdout(`${index === 0 ? '' : '\n'}==> ${id} <==\n`);
      await printLogs(queue, id, stream, follow, args['raw'] === true, io);
    }
  } finally {
    stopNotice();
  }
  return EXIT.OK;
}
