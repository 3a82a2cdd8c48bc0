/**
 * How fast `fsjob validate` audits a big queue: throughput in finished jobs
 * per second, and the auditing process's peak memory, at 10,000 and 100,000
 * finished jobs (each: spec, claim, exec, stdout, stderr, receipt).
 *
 *   node --import tsx bench/validate.bench.ts [--sizes 10000,100000] [--runs 3] [--keep]
 *
 * Setup writes the queues directly (no fsync: only the audit is measured)
 * under $TMPDIR/fsjob-bench-validate-<n>/q; --keep leaves them for the next
 * run, which reuses them. Each audit runs in a fresh child process (the
 * `fsjob validate --json` code path minus argument parsing) so that peak RSS
 * is that audit's own. The page cache is warm: the queue was just written
 * or read; a cold cache adds the disk's read latency per inode.
 *
 * The figures are printed, never asserted (no test asserts a wall-clock time).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes, createHash } from 'node:crypto';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PROTOCOL_VERSION } from '../src/base/constants.ts';
import { selfIdentity } from '../src/model/identity.ts';
import { QUEUE_DIRS } from '../src/model/layout.ts';
import type { OutputSummary } from '../src/records/codec.ts';
import { claimRecord, execRecord, receiptRecord, specRecord } from '../conformance/runner/fixtures.ts';

const FORMAT = 'v1'; // bump when the layout written below changes

async function buildQueue(dir: string, jobs: number): Promise<string> {
  const root = join(dir, 'q');
  const marker = join(dir, `complete-${FORMAT}`);
  if (existsSync(marker)) return root;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(root, { recursive: true, mode: 0o700 });
  for (const name of QUEUE_DIRS) mkdirSync(join(root, name), { mode: 0o700 });
  const now = Date.now();
  writeFileSync(join(root, 'fsjob.json'), `${JSON.stringify({ fsjob: PROTOCOL_VERSION, type: 'queue', queue_id: randomBytes(8).toString('hex'), created_ms: now })}\n`, { mode: 0o600 });
  const me = await selfIdentity();
  const group = { pgid: me.pid, start: me.start, boot_id: me.boot_id, pid_ns: me.pid_ns };
  const emptySha = createHash('sha256').digest('hex');
  const started = Date.now();
  for (let i = 0; i < jobs; i++) {
    const id = `${(BigInt(now) * 1_000_000n + BigInt(i)).toString().padStart(19, '0')}-${randomBytes(8).toString('hex')}`;
    const job = join(root, 'jobs', id);
    mkdirSync(job, { mode: 0o700 });
    const put = (name: string, text: string): void => writeFileSync(join(job, name), text, { mode: 0o600 });
    const record = (value: object): string => `${JSON.stringify(value)}\n`;
    const stdout = `job ${i} done\n`;
    // The sample-record factory (conformance/runner/fixtures.ts); JSON.stringify is compact form, and fast for 100,000 jobs.
    const { spec } = specRecord(id, { argv: ['make', '-C', 'site', `target-${i}`], cwd: '/srv/site', env: { LANG: 'C.UTF-8' }, timeout_ms: 600_000, labels: { team: 'web' } }, me, now);
    put('spec.json', record(spec));
    put('claim.1.json', record(claimRecord(id, 1, me, now)));
    put('exec.1.json', record(execRecord(id, 1, me, { group, recorded_ms: now })));
    put('stdout.1', stdout);
    put('stderr.1', '');
    const summary = (text: string, sha: string): OutputSummary => ({ gen: 1, bytes_total: text.length, bytes_kept: text.length, truncated: false, sha256: sha });
    const stdoutSummary = summary(stdout, createHash('sha256').update(stdout).digest('hex'));
    put('receipt.json', record(receiptRecord(id, 1, me, { started_ms: now, finished_ms: now, stdout: stdoutSummary, stderr: summary('', emptySha) })));
    if ((i + 1) % 20_000 === 0) process.stderr.write(`  built ${i + 1} of ${jobs} jobs (${((Date.now() - started) / 1000).toFixed(0)} s)\n`);
  }
  writeFileSync(marker, '');
  return root;
}

interface ChildResult {
  ms: number;
  /** CPU time (user + system, all threads) of the audit: less sensitive to other load than wall time. */
  cpuMs: number;
  jobs: number;
  files: number;
  errors: number;
  warnings: number;
  maxRssKb: number;
}

/** The audit itself, in this (child) process. */
async function child(root: string, threads: number | undefined): Promise<void> {
  const { auditQueue } = await import('../src/validator/queue.ts');
  const { buildReport } = await import('../src/validator/report.ts');
  const started = performance.now();
  const cpu = process.cpuUsage();
  const audit = await auditQueue(root, threads === undefined ? {} : { threads });
  const report = buildReport({ targets: [root], findings: audit.findings, files: audit.files, jobs: audit.jobs, startedMs: 0, finishedMs: 0 });
  JSON.stringify(report);
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  const result: ChildResult = { ms, cpuMs: (used.user + used.system) / 1000, jobs: audit.jobs, files: audit.files, errors: report.summary.errors, warnings: report.summary.warnings, maxRssKb: process.resourceUsage().maxRSS };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

function runChild(root: string, threads: number | undefined): ChildResult {
  const script = fileURLToPath(import.meta.url);
  const extra = threads === undefined ? [] : ['--threads', String(threads)];
  const out = execFileSync(process.execPath, ['--import', 'tsx', script, '--child', root, ...extra], { encoding: 'utf8', maxBuffer: 1 << 26 });
  return JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as ChildResult;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const at = (flag: string): string | undefined => {
    const index = args.indexOf(flag);
    return index < 0 ? undefined : args[index + 1];
  };
  const childRoot = at('--child');
  const threadsArg = at('--threads');
  if (childRoot !== undefined) return child(childRoot, threadsArg === undefined ? undefined : Number(threadsArg));
  const sizes = (at('--sizes') ?? '10000,100000').split(',').map(Number);
  const runs = Number(at('--runs') ?? '3');
  const keep = args.includes('--keep');
  process.stdout.write(`fsjob validate throughput: ${availableParallelism()} CPUs, load average ${loadavg().map((value) => value.toFixed(2)).join(' ')}, warm page cache\n`);
  for (const size of sizes) {
    const dir = join(tmpdir(), `fsjob-bench-validate-${size}`);
    const built = Date.now();
    const root = await buildQueue(dir, size);
    process.stderr.write(`  queue of ${size} finished jobs ready in ${((Date.now() - built) / 1000).toFixed(1)} s\n`);
    // Inline (one thread) and the default (the main thread and worker threads, one thread per CPU, from PARALLEL_MIN_JOBS jobs on), interleaved run by run.
    for (const [label, threads] of [['1 thread', 1], ['default', undefined]] as const) {
      const results: ChildResult[] = [];
      for (let run = 0; run < runs; run++) results.push(runChild(root, threads));
      const first = results[0] as ChildResult;
      if (first.jobs !== size || first.errors !== 0 || first.warnings !== 0) {
        throw new Error(`the bench queue did not audit clean: ${JSON.stringify(first)}`);
      }
      const ms = median(results.map((result) => result.ms));
      const cpuMs = median(results.map((result) => result.cpuMs));
      const rss = Math.max(...results.map((result) => result.maxRssKb));
      process.stdout.write(
        `${String(size).padStart(7)} jobs, ${label.padEnd(8)}: ${(size / (ms / 1000)).toFixed(0).padStart(6)} jobs/s (median of ${runs}: ${(ms / 1000).toFixed(2)} s wall, ` +
          `${((cpuMs * 1000) / size).toFixed(0)} us CPU per job, ${first.files} files), peak RSS ${(rss / 1024).toFixed(0)} MiB, load ${loadavg()[0]?.toFixed(2)}\n`,
      );
    }
    if (!keep) rmSync(dir, { recursive: true, force: true });
  }
}

await main();
