/** Small statistics for benchmark samples: medians of repeated runs, percentiles of latencies. */

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** Nearest-rank percentile (p in 0..100) of unsorted values; NaN for none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] as number;
}

/** Spread of repeated runs as (max - min) / median, to show how steady a figure is. */
export function spread(values: readonly number[]): number {
  if (values.length < 2) return 0;
  const m = median(values);
  return m === 0 ? 0 : (Math.max(...values) - Math.min(...values)) / m;
}

export function formatRate(value: number | undefined): string {
  if (value === undefined || !Number.isFinite(value)) return 'n/a';
  if (value >= 10_000) return Math.round(value).toLocaleString('en-US');
  if (value >= 100) return value.toFixed(0);
  if (value >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

/** Microseconds or milliseconds, whichever reads better. */
export function formatMicros(us: number | undefined): string {
  if (us === undefined || !Number.isFinite(us)) return 'n/a';
  if (us >= 10_000) return `${(us / 1000).toFixed(0)} ms`;
  if (us >= 1000) return `${(us / 1000).toFixed(2)} ms`;
  return `${us.toFixed(0)} µs`;
}

export function formatRatio(value: number | undefined): string {
  if (value === undefined || !Number.isFinite(value)) return '—';
  return `${value >= 10 ? value.toFixed(1) : value.toFixed(2)}×`;
}

/** Wall-clock microseconds with sub-millisecond resolution, comparable across processes on this host. */
export function wallMicros(): number {
  return (performance.timeOrigin + performance.now()) * 1000;
}

/** Wall and CPU time (user and system of this process, getrusage) that one piece of work took. */
export interface Cost {
  wall_us: number;
  cpu_user_us: number;
  cpu_system_us: number;
}

export async function costOf<T>(body: () => Promise<T>): Promise<{ value: T; cost: Cost }> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const value = await body();
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { value, cost: { wall_us: wall * 1000, cpu_user_us: cpu.user, cpu_system_us: cpu.system } };
}

/** CPU of this process (every thread: the pool's fsyncs too) since `from`, in µs. */
export function cpuSince(from: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(from);
  return used.user + used.system;
}
