/**
 * Bounded capture of one output stream (spec EXEC-1, RCPT-2, RCPT-5).
 *
 * The first `limit` bytes go to the exclusively created output file; the rest
 * is read, counted and discarded, so a command that writes 100 MB never
 * blocks on a full pipe and never fills the disk. `finish()` fsyncs the file
 * before anyone may publish a receipt that describes it.
 */
import { createHash } from 'node:crypto';
import type { SafeHandle } from '../fs/safefs.ts';
import { Writable } from 'node:stream';
import { once } from 'node:events';

export interface OutputSummary {
  /** null when the owner stopped reading before end of file (EXEC-12): the total is unknown. */
  bytes_total: number | null;
  bytes_kept: number;
  truncated: boolean;
  sha256: string;
}

export class OutputCapture extends Writable {
  private readonly file: SafeHandle;
  private readonly limit: number;
  private readonly hash = createHash('sha256');
  private total = 0;
  private kept = 0;
  /** The first write error: from then on every byte is counted and discarded. */
  private failure: Error | undefined;

  constructor(file: SafeHandle, limit: number) {
    super({ highWaterMark: 1 << 16 });
    this.file = file;
    this.limit = limit;
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
    this.total += chunk.length;
    const room = this.limit - this.kept;
    if (room <= 0 || this.failure !== undefined) {
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
      this.hash.update(data.subarray(offset, offset + bytesWritten));
      this.kept += bytesWritten;
      offset += bytesWritten;
    }
  }

  /** Makes the kept bytes durable and returns what the receipt says about them. */
  async finish(): Promise<OutputSummary> {
    if (!this.writableFinished) {
      const finished = once(this, 'finish');
      if (!this.writableEnded) this.end();
      await finished;
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
      sha256: this.hash.copy().digest('hex'),
    };
  }
}
