/**
 * The reference for command jobs: how fast this node can start `true` and
 * wait for it, one after another. Two variants: stdio piped (what spawn does
 * by default, and what a worker capturing stdout/stderr needs) and stdio
 * ignored (the bare fork/exec/wait cost).
 *
 * Usage: spawn-rate.ts <n> <pipe|ignore>
 */
import { spawn } from 'node:child_process';
import { childResult } from './lib/proc.ts';

const n = Number(process.argv[2] ?? 200);
const stdio = process.argv[3] === 'ignore' ? 'ignore' : 'pipe';

function once(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('true', [], { stdio });
    child.on('error', reject);
    // 'close' waits for the pipes too, as a worker reading outputs must.
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`true exited ${code}`))));
  });
}

for (let i = 0; i < 10; i++) await once(); // warm-up
const t0 = performance.now();
for (let i = 0; i < n; i++) await once();
const ms = performance.now() - t0;
childResult({ n, stdio, jobs_per_s: n / (ms / 1000) });
