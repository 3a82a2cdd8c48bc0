/**
 * What bench/node-floor.mjs and bench/native-floor/native-floor.mjs share:
 * the job's names and records (JSON.stringify, the spec's compact form
 * checked after JSON.parse) and the count, as bench/cpu-per-job.bench.ts
 * counts: 5 warm-up jobs, then N enqueued and N consumed, process.cpuUsage
 * (every thread) around each phase, per job, one JSON line. Plain
 * JavaScript, so the measured process runs without the tsx loader.
 */
import { randomBytes } from 'node:crypto';

// Random names from a pool filled 4 KiB at a time, as the reference's (randomBytes checks getpid per call).
let pool = randomBytes(4096);
let used = 0;
export const hex = () => {
  if (used + 8 > pool.length) [pool, used] = [randomBytes(4096), 0];
  used += 8;
  return pool.toString('hex', used - 8, used);
};
export const jobId = (now, i) => `${String(now * 1e6 + i).padStart(19, '0')}-${hex()}`;
export const specOf = (id, now, payload) => ({ fsjob: '1.2', type: 'spec', id, created_ms: now, handler: 'bench', payload, priority: 1000, max_attempts: 1, timeout_ms: 60_000, kill_grace_ms: 5_000, queue_deadline_ms: null, stdin: null, lane: null, labels: {} });
const owner = { host: 'h', boot_id: 'b', pid: process.pid, start_time: 1, worker_id: 'w' };
export const claimOf = (id) => ({ fsjob: '1.2', type: 'claim', job_id: id, gen: 1, claimed_ms: Date.now(), lease_ms: 30_000, owner });
export const execOf = (id) => ({ fsjob: '1.2', type: 'exec', job_id: id, gen: 1, attempt: 1, started_ms: Date.now() });
export const receiptOf = (id, result) => ({ fsjob: '1.2', type: 'receipt', job_id: id, gen: 1, outcome: 'succeeded', finished_ms: Date.now(), attempts: 1, result, message: null });
export const line = (record) => `${JSON.stringify(record)}\n`;
/** Whether a listing of the job directory shows it claimed or finished (claim step 2). */
export const claimedBefore = (names) => names.some((name) => name === 'receipt.json' || name.startsWith('claim.'));

/** The spec's text (its final line feed left out), parsed and checked: compact form, its id. */
export function parseSpec(text, id) {
  const spec = JSON.parse(text);
  if (JSON.stringify(spec) !== text || spec.id !== id) throw new Error(`${id}: spec`);
  return spec;
}

/**
 * The count: `enqueue(i, payload)` n times, then every name `readyNames()` gives, sorted, through
 * `consume(entry, handler)`; prints {jobs, ...fields, enqueue, consume} with each phase's CPU per job.
 */
export function measure(n, fields, { enqueue, consume, readyNames }) {
  const drain = () => {
    for (const entry of readyNames().sort()) consume(entry, () => ({}));
  };
  const perJob = (since) => {
    const cpu = process.cpuUsage(since);
    return { cpu_ms: (cpu.user + cpu.system) / 1000 / n, user_ms: cpu.user / 1000 / n, sys_ms: cpu.system / 1000 / n };
  };
  for (let i = 0; i < 5; i++) enqueue(i, { i });
  drain();
  let since = process.cpuUsage();
  for (let i = 0; i < n; i++) enqueue(5 + i, { i, pad: 'x'.repeat(400) });
  const enqueued = perJob(since);
  since = process.cpuUsage();
  drain();
  process.stdout.write(`${JSON.stringify({ jobs: n, ...fields, enqueue: enqueued, consume: perJob(since) })}\n`);
}
