/**
 * The CPU a run costs, all of it: the processes of a run are started in a
 * cgroup v2 directory of their own, whose cpu.stat counts every process
 * that ever ran in it (usage_usec), those nobody waits for included: nq's
 * job runners, task-spooler's server, fsjob's guardian and spawner. The
 * file exists whether or not the cpu controller is enabled. Where no
 * cgroup can be made (not root, no delegation, cgroup v1) the figure is
 * missing, never guessed.
 */
import { mkdirSync, readFileSync, rmdirSync } from 'node:fs';
import path from 'node:path';

/** The cgroup2 mount point, from /proc/self/mountinfo (field 5; the type follows " - "). */
export function cgroup2Mount(): string | undefined {
  let text: string;
  try {
    text = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return undefined;
  }
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ');
    if (right?.split(' ')[0] === 'cgroup2') return left?.split(' ')[4];
  }
  return undefined;
}

let made = 0;

export interface CpuMeter {
  /** argv that runs `argv` inside the meter's cgroup. */
  wrap(argv: readonly string[]): string[];
  /** Waits (at most `ms`) until no process is left in the cgroup: a guardian polls its pipe for up to a second before it exits. */
  settle(ms: number): Promise<void>;
  /** CPU ms used in the cgroup so far (user + system). */
  usedMs(): number;
  /** Removes the cgroup (once its processes are gone); the figure stays readable from usedMs() taken before. */
  close(): void;
}

/** A fresh cgroup to run in, or undefined where none can be made. */
export function cpuMeter(): CpuMeter | undefined {
  const mount = cgroup2Mount();
  if (mount === undefined) return undefined;
  const dir = path.join(mount, `fsjob-bench-${process.pid}-${++made}`);
  try {
    mkdirSync(dir);
  } catch {
    return undefined;
  }
  return {
    // The shell moves itself, then becomes the command: everything it forks starts inside.
    wrap: (argv) => ['/bin/sh', '-c', 'echo $$ > "$0" && exec "$@"', path.join(dir, 'cgroup.procs'), ...argv],
    settle: async (ms) => {
      const deadline = Date.now() + ms;
      while (Date.now() < deadline && !/^populated 0$/m.test(readFileSync(path.join(dir, 'cgroup.events'), 'utf8'))) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    usedMs: () => {
      const stat = readFileSync(path.join(dir, 'cpu.stat'), 'utf8');
      return Number(/^usage_usec (\d+)$/m.exec(stat)?.[1] ?? Number.NaN) / 1000;
    },
    close: () => {
      try {
        rmdirSync(dir);
      } catch {
        // a process left behind (a daemon): the directory stays, empty of use
      }
    },
  };
}

/** Runs `body` with a meter (or none) and returns its result with the CPU ms it used, NaN without a meter. */
export async function metered<T>(body: (wrap: (argv: readonly string[]) => string[]) => Promise<T>): Promise<{ value: T; cpuMs: number }> {
  const meter = cpuMeter();
  try {
    const value = await body(meter === undefined ? (argv) => [...argv] : meter.wrap);
    await meter?.settle(3000);
    return { value, cpuMs: meter === undefined ? Number.NaN : meter.usedMs() };
  } finally {
    meter?.close();
  }
}
