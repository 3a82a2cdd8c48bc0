/**
 * Command jobs (`true`): the reference rate at which a plain node process
 * (spawn-rate.mjs: no tsx loader, as a user's program runs) spawns `true`
 * serially, and the Debian command queues nq, task-spooler and filespooler.
 * fsjob's `fsjob work` joins these in fsjob.ts. Each row has its CPU per job
 * beside its rate: the reference's own and its children's over the measured
 * spawns; a peer's whole run, every process of it (lib/cgroup-cpu.ts).
 */
import path from 'node:path';
import { metered } from './cgroup-cpu.ts';
import type { Ctx, System } from './harness.ts';
import { BENCH_DIR, commandExists, runJson } from './proc.ts';

/**
 * Jobs per command-job row, the same for every system. 300 rather than 100:
 * the node reference warms up with 10 spawns before it measures, while a
 * worker's first few dozen jobs run code V8 has not yet optimized (the
 * worker's CPU per job measured 4.0-4.8 ms over 100 jobs and 2.9-4.4 ms over
 * 1,000, side by side on a loaded machine). 300 keeps that warm-up a small
 * share, as for a worker serving a queue; the CPU group uses 300 too.
 */
export function commandJobs(quick: boolean): number {
  return quick ? 20 : 300;
}

/**
 * The --concurrency of the single-worker `fsjob work` rows (fsjob.ts),
 * whose best is issue 29's target 1. Up to 64: the worker sizes libuv's
 * pool for its concurrency (src/cli/thread-pool.ts: a thread per job, 16
 * at most), and on the 2-core machine the best N moved between 16, 32 and
 * 64 from run to run (spec/design-hot-path.md, "Pool size").
 */
export const WORK_CONCURRENCY = [2, 4, 8, 16, 32, 64] as const;

export function spawnSystems(n: number): System[] {
  return (['pipe', 'ignore'] as const).map((stdio) => ({
    id: `spawn-${stdio}`,
    label: `node: spawn \`true\` serially, stdio ${stdio === 'pipe' ? 'piped (the reference)' : 'ignored'}`,
    durability: 'n/a',
    run: async () => {
      const r = await runJson<{ jobs_per_s: number; cpu_ms: number }>([process.execPath, path.join(BENCH_DIR, 'spawn-rate.mjs'), String(n), stdio]);
      return { rate: r.jobs_per_s, cpu_ms: r.cpu_ms };
    },
  }));
}

const installHint = (pkg: string) => `${pkg} is not installed (bench/peers.sh installs it as root)`;

/** Runs a bash script that prints one JSON line; `$N` and `$D` (a fresh directory) are set. Its CPU, all processes, per job. */
async function bashJson(ctx: Ctx, name: string, n: number, script: string): Promise<{ seconds: number; cpu_ms: number }> {
  const dir = ctx.fresh(name);
  const { value, cpuMs } = await metered((wrap) =>
    runJson<{ seconds: number }>(wrap(['bash', '-c', script]), {
      env: { ...process.env, N: String(n), D: dir },
      cwd: dir,
      timeoutMs: 600_000,
    }),
  );
  return { seconds: value.seconds, cpu_ms: cpuMs / n };
}

const TIMED = (body: string) => `set -euo pipefail
t0=$(date +%s%N)
${body}
t1=$(date +%s%N)
printf '{"seconds":%s}\\n' "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print (b-a)/1e9}')"`;

export function commandPeerSystems(n: number): System[] {
  return [
    {
      id: 'nq',
      label: 'nq: `nq true` ×N then `nq -w` (enqueue and run, serial)',
      durability: '1 fsync per job (strace), job file only',
      skip: async () => (commandExists('nq') ? null : installHint('nq')),
      run: async (ctx) => {
        const r = await bashJson(ctx, 'nq', n, `export NQDIR="$D/q"\n${TIMED('for ((i = 0; i < N; i++)); do nq -q true; done\nnq -w')}`);
        return { rate: n / r.seconds, cpu_ms: r.cpu_ms };
      },
    },
    {
      id: 'tsp',
      label: 'task-spooler: `tsp -n true` ×N then `tsp -w` (server in memory, 1 slot)',
      durability: 'none (queue in server memory)',
      skip: async () => (commandExists('tsp') ? null : installHint('task-spooler')),
      run: async (ctx) => {
        const body = `export TS_SOCKET="$D/sock" TMPDIR="$D" TS_MAXFINISHED=100000
trap 'tsp -K >/dev/null 2>&1 || true' EXIT
tsp -S 1 >/dev/null 2>&1 || true
${TIMED('for ((i = 0; i < N; i++)); do tsp -n true >/dev/null; done\ntsp -w >/dev/null')}`;
        const r = await bashJson(ctx, 'tsp', n, body);
        return { rate: n / r.seconds, cpu_ms: r.cpu_ms };
      },
    },
    {
      id: 'fspl',
      label: 'filespooler: `fspl queue-process` of N prepared `true` packets',
      durability: '1 fsync per queue-write and 1 per processed job (strace)',
      skip: async () => (commandExists('fspl') ? null : installHint('filespooler')),
      run: async (ctx) => {
        const body = `fspl queue-init -q "$D/q"
for ((i = 0; i < N; i++)); do fspl prepare -s "$D/seq" -i /dev/null | fspl queue-write -q "$D/q"; done
${TIMED('fspl -l ERROR queue-process -q "$D/q" --ignore-payload true')}
test -z "$(ls -A "$D/q/jobs")"`;
        const r = await bashJson(ctx, 'fspl', n, body);
        return { rate: n / r.seconds, cpu_ms: r.cpu_ms };
      },
    },
  ];
}

