/**
 * The reference for command jobs: how fast a plain node process (no tsx
 * loader, no harness in it: this file is JavaScript, run as `node
 * spawn-rate.mjs`) starts `true` and waits for it, one after another. Two
 * variants: stdio piped (what spawn does by default, and what a worker
 * capturing stdout/stderr needs) and stdio ignored (the bare
 * fork/exec/wait cost). Besides the rate: CPU per spawn, this process's own
 * and its children's (the reaped `true`s, from /proc/self/stat), over the
 * measured spawns only.
 *
 * Usage: node spawn-rate.mjs <n> <pipe|ignore>   prints one JSON line
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

const n = Number(process.argv[2] ?? 200);
const stdio = process.argv[3] === 'ignore' ? 'ignore' : 'pipe';
/** USER_HZ: the unit of /proc/<pid>/stat times on every Linux. */
const TICK_MS = 10;

function once() {
  return new Promise((resolve, reject) => {
    const child = spawn('true', [], { stdio });
    child.on('error', reject);
    // 'close' waits for the pipes too, as a worker reading outputs must.
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`true exited ${code}`))));
  });
}

/** CPU ms of this process (getrusage) and of its reaped children (/proc/self/stat cutime + cstime), or NaN without /proc. */
function cpuMs() {
  const usage = process.resourceUsage();
  let children = Number.NaN;
  try {
    const stat = readFileSync('/proc/self/stat', 'latin1');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    children = (Number(fields[13]) + Number(fields[14])) * TICK_MS;
  } catch {
    // no /proc: the children's share is unknown
  }
  return { self: (usage.userCPUTime + usage.systemCPUTime) / 1000, children };
}

for (let i = 0; i < 10; i++) await once(); // warm-up
const before = cpuMs();
const t0 = performance.now();
for (let i = 0; i < n; i++) await once();
const ms = performance.now() - t0;
const after = cpuMs();
const self = (after.self - before.self) / n;
const children = (after.children - before.children) / n;
process.stdout.write(`${JSON.stringify({ n, stdio, jobs_per_s: n / (ms / 1000), cpu_ms: self + children, self_cpu_ms: self, children_cpu_ms: children })}\n`);
