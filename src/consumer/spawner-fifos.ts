/**
 * The FIFO stock of a worker's spawner (spawner.ts, spec/design-spawner.md).
 * Node cannot make a FIFO, so the spawner's `mkfifo` makes the three FIFOs of
 * an attempt (stdout, stderr, release) ahead, a batch of FIFO_BATCH triples
 * per `mkfifo`, in a 0700 directory of this worker's, and each is used once:
 * a process that left a job's group and kept its stdout cannot write into a
 * later job's. The next batch is asked for while the stock still holds
 * FIFO_LOW, so a launch rarely waits for one.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { deferred, type Deferred } from '../base/deferred.ts';
import { fifosRequest, spawnerError, type Fifos } from './spawner-request.ts';

/**
 * FIFO triples made per mkfifo, and the stock below which the next batch is
 * made ahead. Each batch costs a fork and an exec of mkfifo in the spawner
 * (measured: 1 to 1.6% of a `true` job's CPU at 16 a batch); 64 triples are
 * 192 paths of about 40 bytes, far below ARG_MAX, and 192 inodes of a
 * memory filesystem. The low mark covers a worker's usual concurrency, so a
 * launch rarely waits for a batch.
 */
const FIFO_BATCH = 64;
const FIFO_LOW = 16;

/** One spawner process, as the stock sees it. */
export interface FifoMaker {
  /** The directory it makes FIFOs in (and removes when it exits). */
  readonly dir: string;
  /** True once it exited: it answers no more batches, and its FIFOs went with its directory. */
  readonly exited: boolean;
  /** Writes one request line to it; its `m` line answers through `answered()`. */
  send(request: Buffer): void;
}

/** A spawner's FIFO triples made ahead: each handed out once, by `take()`. */
export class FifoStock {
  private seq = 0;
  private readonly batches = new Map<string, Deferred<boolean>>();
  private pool: Fifos[] = [];
  private filling: Promise<boolean> | undefined;

  /** @param hold called when a batch goes out or comes back: while one is `pending`, its answer must keep this process alive (it comes through an unreferenced pipe) */
  constructor(private readonly hold: () => void) {}

  /** The batches asked for and not yet answered. */
  get pending(): number {
    return this.batches.size;
  }

  /** A FIFO triple from the stock, made by the spawner a batch at a time; awaited when the stock is out. */
  async take(maker: FifoMaker): Promise<Fifos> {
    for (let failures = 0; ; ) {
      const fifos = this.pool.shift();
      if (fifos !== undefined) {
        if (this.pool.length < FIFO_LOW) this.ahead(maker);
        return fifos;
      }
      if (maker.exited || failures >= 2) throw spawnerError(`the spawner could not make FIFOs in ${maker.dir}`);
      if (!(await this.fill(maker))) failures += 1;
    }
  }

  /** Asks for a batch without waiting for it (a new spawner's first, or a stock running low). */
  ahead(maker: FifoMaker): void {
    this.fill(maker).catch(() => undefined);
  }

  /** The spawner's `m TAG ok|fail` line: whether the batch TAG was made. */
  answered(tag: string, made: boolean): void {
    this.batches.get(tag)?.resolve(made);
  }

  /** Its spawner exited: pending batches are not made, and the stock went with its directory. */
  lost(): void {
    for (const batch of this.batches.values()) batch.resolve(false);
    this.discard();
  }

  /** Drops the stock (its spawner is closing and removes the files). */
  discard(): void {
    this.pool = [];
  }

  /** Asks the spawner for a batch of FIFO triples (one at a time); true when they were made. */
  private fill(maker: FifoMaker): Promise<boolean> {
    this.filling ??= (async () => {
      const tag = `f${++this.seq}`;
      const made: Fifos[] = [];
      for (let i = 0; i < FIFO_BATCH; i++) {
        const base = path.join(maker.dir, String(++this.seq));
        made.push({ out: `${base}.o`, err: `${base}.e`, rel: `${base}.r` });
      }
      const answer = deferred<boolean>();
      this.batches.set(tag, answer);
      this.hold();
      if (maker.exited) answer.resolve(false);
      else maker.send(fifosRequest(tag, made));
      const madeThem = await answer.promise;
      this.batches.delete(tag);
      this.hold();
      if (madeThem && !maker.exited) {
        this.pool.push(...made);
        return true;
      }
      // None of this batch is handed out: remove what of it was made (a `fail` may have made some).
      for (const f of made) for (const file of [f.out, f.err, f.rel]) rmSync(file, { force: true });
      return false;
    })().finally(() => {
      this.filling = undefined;
    });
    return this.filling;
  }
}
