/**
 * A bounded pool: at most `size` units of work at once. Cases take one unit;
 * a case that must run alone (it rewrites /proc/sys/kernel/ns_last_pid, or
 * measures time) takes all of them; a case that fans out (a crash sweep)
 * takes none itself and one per crash point.
 */
export class Pool {
  readonly size: number;
  private free: number;
  private readonly waiting: { units: number; wake: () => void }[] = [];

  constructor(size: number) {
    this.size = Math.max(1, Math.floor(size));
    this.free = this.size;
  }

  async run<T>(work: () => Promise<T>, units = 1): Promise<T> {
    const want = Math.min(Math.max(1, units), this.size);
    await this.acquire(want);
    try {
      return await work();
    } finally {
      this.release(want);
    }
  }

  private acquire(units: number): Promise<void> {
    // FIFO: a waiting exclusive case is not starved by later small ones.
    if (this.waiting.length === 0 && this.free >= units) {
      this.free -= units;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push({ units, wake: resolve }));
  }

  private release(units: number): void {
    this.free += units;
    while (this.waiting.length > 0) {
      const next = this.waiting[0];
      if (next === undefined || this.free < next.units) break;
      this.waiting.shift();
      this.free -= next.units;
      next.wake();
    }
  }
}

/** Runs `items` through `work` with the pool, keeping their order in the result. */
export function mapPool<T, R>(pool: Pool, items: readonly T[], work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  return Promise.all(items.map((item, index) => pool.run(() => work(item, index))));
}
