/**
 * Group commit: one run of a durability step (an fsync of some directories)
 * shared by every caller that asked for it while the previous run was still
 * going. spec/producer.md step 8 asks that jobs/ be fsynced after a job's rename and
 * before its id is reported; nothing requires one fsync per job, so jobs
 * renamed while an fsync is under way all wait for the next one, and a batch
 * of N jobs costs far fewer than N directory fsyncs.
 *
 * The guarantee a caller relies on: `after()` resolves only once a run that
 * BEGAN AFTER the call has finished. A run already in flight may have begun
 * before the caller's rename, so it never counts for that caller.
 */
export class SharedSync {
  readonly #run: () => Promise<void>;
  /** The run in flight, if any. */
  #running: Promise<void> | undefined;
  /** The next run, which callers join until it begins. */
  #next: Promise<void> | undefined;
  /** How many runs have begun (tests and benchmarks read it). */
  runs = 0;

  constructor(run: () => Promise<void>) {
    this.#run = run;
  }

  /** Resolves once a run begun after this call has finished; rejects with that run's failure. */
  after(): Promise<void> {
    if (this.#next !== undefined) return this.#next;
    const next = this.#begin(this.#running);
    this.#next = next;
    return next;
  }

  async #begin(previous: Promise<void> | undefined): Promise<void> {
    // Always yield before beginning, even when nothing is running: callers in
    // the same turn of the event loop join this run (and #next is set).
    await (previous ?? Promise.resolve()).catch(() => undefined);
    this.#next = undefined;
    this.runs += 1;
    const run = this.#run();
    this.#running = run;
    try {
      await run;
    } finally {
      if (this.#running === run) this.#running = undefined;
    }
  }
}
