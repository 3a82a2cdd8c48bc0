/**
 * Where an fsync runs: on the main thread, or on libuv's thread pool.
 *
 * An fsync handed to the pool costs CPU besides the disk's flush: a futex
 * wake of a pool thread, an eventfd write when it is done, an epoll wake-up
 * and a callback on the main thread. Measured on the project's 2-core VM
 * (spec/design-hot-path.md): about 45 µs of CPU per fsync, and
 * a durable payload job makes nine or ten. Called synchronously, the same
 * fsync costs only the kernel's work, but the event loop waits for the disk.
 *
 * The rule: an fsync runs inline when nothing else of fsjob's in this
 * process could progress meanwhile, that is when at most one *operation* is
 * in flight (an `enqueue` call, a claimed job from its claim to its end, a
 * Worker's scan). Callers say when an operation begins and ends
 * (`beginOperation`); a batch that pipelines many jobs counts as two, so its
 * fsyncs always overlap on the pool. Several fsyncs one step needs at once
 * (a staged file and its directory, jobs/ and tmp/) go through `together`:
 * when the rule allows, all inline one after another (no hand-off at all);
 * otherwise all but the last on the pool, so they overlap on the disk.
 *
 * Everything else goes to the pool, where concurrent fsyncs share the disk's
 * cache flushes. The pool has UV_THREADPOOL_SIZE threads (4 unless the
 * environment sets it: node starts the pool while it loads ES modules, so no
 * library code can size it; spec/design-hot-path.md advises at least a
 * Worker's concurrency). `FSJOB_INLINE_FSYNC=0` in the environment turns the inline
 * path off, for a process whose event loop must never wait for a disk (a
 * server that enqueues jobs among requests it is serving).
 */
import { fsync, fsyncSync } from 'node:fs';

/** Whether the inline path may be taken at all (read once: FSJOB_INLINE_FSYNC=0 turns it off). */
const INLINE_ALLOWED = process.env['FSJOB_INLINE_FSYNC'] !== '0';

let operations = 0;
/** Set while `together` starts the fsyncs that must not block the main thread. */
let poolOnly = false;

const RESOLVED: Promise<void> = Promise.resolve();

/**
 * An operation of this process begins: until the returned function is
 * called (once; later calls do nothing), fsyncs of other operations go to
 * the pool. `weight` 2 or more says the operation overlaps its own fsyncs
 * (a pipelined batch), so none of them runs inline.
 */
export function beginOperation(weight = 1): () => void {
  operations += weight;
  let open = true;
  return () => {
    if (!open) return;
    open = false;
    operations -= weight;
  };
}

/** Operations in flight now (tests read it). */
export function operationsInFlight(): number {
  return operations;
}

/** Whether an fsync requested now would run inline. */
export function inlineNow(): boolean {
  return INLINE_ALLOWED && !poolOnly && operations <= 1;
}

/**
 * fsync(2) of a descriptor: inline when this process has nothing else in
 * flight, else on the pool. `owner` is the object that closes `fd` when it
 * is garbage (a held directory, open-dir.ts): the pending call keeps it
 * reachable, so the descriptor cannot be closed and its number reused
 * before the pool gets to it.
 */
export function fsyncFd(fd: number, owner?: object): Promise<void> {
  if (inlineNow()) {
    try {
      fsyncSync(fd);
      return RESOLVED;
    } catch (error) {
      return Promise.reject(error);
    }
  }
  return new Promise((resolve, reject) =>
    fsync(fd, (error) => {
      // The callback holds `owner` until the pool is done with `fd`.
      void owner;
      if (error === null) resolve();
      else reject(error);
    }),
  );
}

/**
 * Runs several durability steps and waits for every one, then throws the
 * first failure in array order (settleAll). Alone in the process (inlineNow),
 * one after another, each inline; otherwise all at once, all but the last
 * started with the inline path off, so they run on the pool while the last
 * may run on the main thread.
 */
export async function together(steps: readonly (() => Promise<void>)[]): Promise<void> {
  if (inlineNow()) return oneAfterAnother(steps);
  const started: Promise<void>[] = [];
  const last = steps.length - 1;
  for (let index = 0; index < steps.length; index++) {
    const step = steps[index] as () => Promise<void>;
    if (index === last) {
      started.push(settled(step));
      break;
    }
    const before = poolOnly;
    poolOnly = true;
    try {
      started.push(settled(step));
    } finally {
      poolOnly = before;
    }
  }
  const results = await Promise.allSettled(started);
  for (const result of results) if (result.status === 'rejected') throw result.reason;
}

/**
 * `together` for an operation alone in its process: every step inline, one
 * after another, then the first failure in array order. The disk flushes
 * them one by one (as the floor's single thread does), and no step pays a
 * hand-off to the pool: on the project's VM the hand-off's CPU outweighed
 * what overlapping two fsyncs saved in wall time (spec/design-hot-path.md).
 */
async function oneAfterAnother(steps: readonly (() => Promise<void>)[]): Promise<void> {
  let failure: { error: unknown } | undefined;
  for (const step of steps) {
    try {
      await step();
    } catch (error) {
      failure ??= { error };
    }
  }
  if (failure !== undefined) throw failure.error;
}

/** A step's promise, also when it throws before returning one. */
function settled(step: () => Promise<void>): Promise<void> {
  try {
    return step();
  } catch (error) {
    return Promise.reject(error);
  }
}
