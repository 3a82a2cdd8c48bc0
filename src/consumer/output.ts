/**
 * Bounded capture of one output stream (spec EXEC-1, EXEC-17, RCPT-2, RCPT-5).
 *
 * Of `limit` bytes per stream, the head part (all of them for output_keep
 * "head", half for "head_tail", none for "tail") goes to the exclusively
 * created output file as it arrives; the bytes after it are read and
 * counted, and only the last `limit - head` of them are held here, to be
 * appended when the stream ends. The file is append-only (PUB-7) and a
 * command that writes 100 MB never blocks on a full pipe nor fills the disk.
 * `finish()` appends the tail and fsyncs the file before anyone may publish
 * a receipt that describes it.
 */
import { createHash, type Hash } from 'node:crypto';
import type { SafeHandle } from '../fs/safefs.ts';
import { Writable } from 'node:stream';
import { once } from 'node:events';
import { headPart, type OutputKeep } from '../model/output-keep.ts';

export interface OutputSummary {
  /** null when the owner stopped reading before end of file (EXEC-12): the total is unknown. */
  bytes_total: number | null;
  bytes_kept: number;
  truncated: boolean;
  sha256: string;
}

/**
 * The last `size` bytes of a stream, held as the chunks that carry them
 * (at most one chunk more than `size` bytes): no copy per write.
 */
class TailBuffer {
  private readonly size: number;
  private readonly chunks: Buffer[] = [];
  private length = 0;

  constructor(size: number) {
    this.size = size;
  }

  push(chunk: Buffer): void {
    if (this.size <= 0 || chunk.length === 0) return;
    this.chunks.push(chunk.length > this.size ? chunk.subarray(chunk.length - this.size) : chunk);
    this.length += Math.min(chunk.length, this.size);
    // Drop whole chunks that lie entirely before the last `size` bytes.
    while (this.chunks.length > 1 && this.length - (this.chunks[0] as Buffer).length >= this.size) {
      this.length -= (this.chunks.shift() as Buffer).length;
    }
  }

  /** The held bytes, exactly the last min(size, seen) of the stream. */
  bytes(): Buffer {
    const all = Buffer.concat(this.chunks, this.length);
    return all.length > this.size ? all.subarray(all.length - this.size) : all;
  }
}

/** The SHA-256 of no bytes. */
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

export class OutputCapture extends Writable {
  private readonly file: SafeHandle;
  /** Bytes written to the file as they arrive (EXEC-17's head part). */
  private readonly head: number;
  private readonly tail: TailBuffer;
  /** Made at the first kept byte: most commands of a queue write nothing to one stream or both. */
  private hash: Hash | undefined;
  private total = 0;
  private kept = 0;
  /** The first write error: from then on every byte is counted and discarded. */
  private failure: Error | undefined;

  constructor(file: SafeHandle, limit: number, keep: OutputKeep = 'head') {
    super({ highWaterMark: 1 << 16 });
    this.file = file;
    this.head = headPart(limit, keep);
    this.tail = new TailBuffer(limit - this.head);
  }

  /** Bytes seen so far (for heartbeats and `fsjob logs --follow`). */
  get bytesTotal(): number {
    return this.total;
  }

  /** The write error that stopped keeping bytes (ENOSPC, EIO), if any. */
  get writeError(): Error | undefined {
    return this.failure;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    const before = this.total;
    this.total += chunk.length;
    const room = Math.max(0, this.head - before);
    // What lies past the head part is held for the tail (the last limit - head bytes win).
    if (chunk.length > room) this.tail.push(chunk.subarray(room));
    if (room === 0 || this.failure !== undefined) {
      callback();
      return;
    }
    const slice = chunk.length <= room ? chunk : chunk.subarray(0, room);
    // A failed write must not error the stream: the pipe would stop being
    // read and the command would block on it. Keep counting, stop keeping.
    this.writeAll(slice).then(
      () => callback(),
      (error: unknown) => {
        this.failure = error instanceof Error ? error : new Error(String(error));
        callback();
      },
    );
  }

  /** Kept bytes and the digest advance only by what the file really holds (RCPT-5). */
  private async writeAll(data: Buffer): Promise<void> {
    let offset = 0;
    while (offset < data.length) {
      const { bytesWritten } = await this.file.write(data, offset, data.length - offset);
      if (bytesWritten <= 0) throw Object.assign(new Error('write made no progress'), { code: 'EIO' });
      (this.hash ??= createHash('sha256')).update(data.subarray(offset, offset + bytesWritten));
      this.kept += bytesWritten;
      offset += bytesWritten;
    }
  }

  /** Appends the held tail, makes the kept bytes durable and returns what the receipt says about them. */
  async finish(): Promise<OutputSummary> {
    if (!this.writableFinished) {
      const finished = once(this, 'finish');
      if (!this.writableEnded) this.end();
      await finished;
    }
    // EXEC-17: the tail goes after the head, once the stream has ended. After a
    // write error nothing more is written: the file holds what it holds.
    const tail = this.tail.bytes();
    if (tail.length > 0 && this.failure === undefined) {
      await this.writeAll(tail).catch((error: unknown) => {
        this.failure = error instanceof Error ? error : new Error(String(error));
      });
    }
    // RCPT-2 asks for the fsync even when the file stayed empty: a directory fsync
    // makes the entry durable, but only the file's own fsync is a portable
    // promise for its inode. Created before exec.<g>.json, whose directory fsync
    // already committed it, an empty file's fsync is cheap.
    await this.file.sync();
    return {
      bytes_total: this.total,
      bytes_kept: this.kept,
      truncated: this.total > this.kept,
      sha256: this.hash === undefined ? EMPTY_SHA256 : this.hash.copy().digest('hex'),
    };
  }
}
