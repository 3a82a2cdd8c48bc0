/**
 * The output FIFOs of one attempt of a worker's spawner (spawner.ts): read
 * to their end at once for a command that ended soon after its release, as
 * streams for one still running (STREAM_AFTER_MS says why;
 * spec/design-command-worker-costs.md, the second pass, what it saved).
 */
import { closeSync, readSync } from 'node:fs';
import net from 'node:net';
import type { Readable, Writable } from 'node:stream';
import type { Clock } from '../base/clock.ts';
import { drainStreams } from './launch.ts';

/**
 * How long after its release a command's output FIFOs are left unwatched:
 * most commands of a queue of short ones have ended by then, and their
 * output is read to its end with a few read(2)s, without a stream and an
 * epoll watch per FIFO. A command that fills a FIFO (64 KiB) sooner waits at
 * most this long for its first read.
 */
const STREAM_AFTER_MS = 50;

/** What readToEnd reads into; what it passes on is copied out. */
const scratch = Buffer.allocUnsafe(1 << 16);

/**
 * Reads a non-blocking FIFO into `sink` until end of file (true: every
 * writer has closed it) or until it would block (false: a writer still
 * holds it open).
 */
function readToEnd(fd: number, sink: Writable): boolean {
  // EAGAIN is the expected answer of a FIFO still held: its stack is not needed.
  const depth = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    for (;;) {
      const n = readSync(fd, scratch, 0, scratch.length, null);
      if (n === 0) return true;
      sink.write(Buffer.from(scratch.subarray(0, n)));
    }
  } catch {
    return false; // EAGAIN; any other error is the stream's to report
  } finally {
    Error.stackTraceLimit = depth;
  }
}

/** The read ends an attempt holds (null once closed or handed to a stream); the attempt's own record, shared. */
export interface OutputFds {
  outFd: number | null;
  errFd: number | null;
}

/** The output side of one attempt's Leader (launch.ts): connect, then, after the release, armed; drained at the end. */
export class FifoOutputs {
  private readonly streams: Readable[] = [];
  private sinks: [Writable, Writable] | undefined;
  private watch: NodeJS.Timeout | undefined;

  /** Streams not yet at end of file. */
  private open = 0;

  /** @param ended called when every output FIFO reached end of file after the release, as a stream or at STREAM_AFTER_MS (spawner.ts prompts bash's spawner then) */
  constructor(
    private readonly fds: OutputFds,
    private readonly ended: () => void = () => undefined,
  ) {}

  connect(stdout: Writable, stderr: Writable): void {
    this.sinks = [stdout, stderr];
  }

  /** After the release: the FIFOs become streams only if the command still runs STREAM_AFTER_MS later. */
  arm(): void {
    this.watch = setTimeout(() => this.watchOutputs(), STREAM_AFTER_MS);
    this.watch.unref();
  }

  /** Reads each FIFO to its end at once where every writer has closed it, and waits for the others as streams. */
  async drain(clock: Clock): Promise<boolean> {
    this.stop();
    this.settle();
    return drainStreams(this.streams, clock);
  }

  stop(): void {
    clearTimeout(this.watch);
    this.watch = undefined;
  }

  /**
   * STREAM_AFTER_MS after the release, as at the drain: a FIFO whose writers
   * have all closed (most often: the command has ended, and its end is not
   * reported yet, while many run) is read to its end and closed, with no
   * stream (a socket and an epoll watch, ~0.035 ms of the main thread per
   * command at --concurrency 32 when most commands had one). A FIFO also
   * reads end of file before its first writer opens it, but the leader was
   * reported (`p`, spawner.sh) by a process that already held both FIFOs'
   * write ends, from its own redirections or its waiter's. When every FIFO
   * is done, `ended` says so, as the last stream's end would.
   */
  private watchOutputs(): void {
    this.watch = undefined;
    this.settle();
    if (this.sinks !== undefined && this.open === 0) this.ended();
  }

  /** Each FIFO still held: read to its end and closed where every writer has closed it, else a stream that waits for its end. */
  private settle(): void {
    if (this.sinks === undefined) return;
    for (const [key, sink] of [['outFd', this.sinks[0]], ['errFd', this.sinks[1]]] as const) {
      const fd = this.fds[key];
      if (fd === null) continue;
      if (readToEnd(fd, sink)) {
        closeSync(fd);
        this.fds[key] = null;
      } else {
        this.stream(key, sink); // a writer still holds it: wait for its end as a stream
      }
    }
  }

  private stream(key: keyof OutputFds, sink: Writable): void {
    const fd = this.fds[key];
    if (fd === null) return;
    this.fds[key] = null;
    const socket = new net.Socket({ fd, readable: true, writable: false });
    socket.pipe(sink);
    this.streams.push(socket);
    this.open += 1;
    socket.once('end', () => {
      if (--this.open === 0) this.ended();
    });
  }
}
