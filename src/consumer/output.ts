/**
 * Bounded capture of one output stream (spec EXEC-1, RCPT-2, RCPT-5).
 *
 * The first `limit` bytes go to the exclusively created output file; the rest
 * is read, counted and discarded, so a command that writes 100 MB never
 * blocks on a full pipe and never fills the disk. `finish()` fsyncs the file
 * before anyone may publish a receipt that describes it.
 */
import { createHash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { once } from 'node:events';

export interface OutputSummary {
  bytes_total: number;
  bytes_kept: number;
  truncated: boolean;
  sha256: string;
}

export class OutputCapture extends Writable {
  private readonly file: FileHandle;
  private readonly limit: number;
  private readonly hash = createHash('sha256');
  private total = 0;
  private kept = 0;

  constructor(file: FileHandle, limit: number) {
    super({ highWaterMark: 1 << 16 });
    this.file = file;
    this.limit = limit;
  }

  /** Bytes seen so far (for heartbeats and `fsjob logs --follow`). */
  get bytesTotal(): number {
    return this.total;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.total += chunk.length;
    const room = this.limit - this.kept;
    if (room <= 0) {
      callback();
      return;
    }
    const slice = chunk.length <= room ? chunk : chunk.subarray(0, room);
    this.kept += slice.length;
    this.hash.update(slice);
    this.writeAll(slice).then(() => callback(), callback);
  }

  private async writeAll(data: Buffer): Promise<void> {
    let offset = 0;
    while (offset < data.length) {
      const { bytesWritten } = await this.file.write(data, offset, data.length - offset);
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
    await this.file.sync();
    return {
      bytes_total: this.total,
      bytes_kept: this.kept,
      truncated: this.total > this.kept,
      sha256: this.hash.copy().digest('hex'),
    };
  }
}
