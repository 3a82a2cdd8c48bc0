/**
 * What N consumer processes cost each other, per job (issue 24 target 3a).
 * Not a test and not a bench group: a measurement script, plain node, the
 * built library of dist/ in every measured process (no tsx loader).
 *
 *   node bench/consumer-pool-costs.mjs DIR [--jobs 600] [--procs 1,2,4,8,16] [--strace] [--backlog] [--dists A=DIR,B=DIR]
 *
 * For each process count: a fresh queue under DIR (put DIR on a fresh ext4:
 * bench/README.md), N serving Workers (concurrency 1, warmed up on a queue
 * of their own), then one producer enqueuing --jobs payload jobs one at a
 * time while they serve. Per job, summed over the consumers: CPU (from GO to
 * STOP), scans (claimNextIn calls), claims lost to another consumer (raced),
 * fs.watch events delivered and loop wake-ups; with --strace each consumer
 * runs under `strace -f -c` and the table adds system calls, getdents64,
 * epoll_wait, linkat and fsync per job. --backlog enqueues every job before
 * the consumers start (they drain a queue that is never empty; the producer's
 * CPU is then not beside theirs). --dists compares builds side by side in
 * one run (each a dist/ directory, e.g. one built from main): every process
 * count runs once per build, alternating (strace slows every process, so its
 * rate and CPU are not comparable with a run without it).
 */
import { spawn } from 'node:child_process';
import fs, { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const HERE = fileURLToPath(import.meta.url);
const DIST = path.join(process.env.FSJOB_POOL_DIST ?? path.join(path.dirname(HERE), '..', 'dist'), 'src');
const HANDLER = 'bench';
const [mode, ...args] = process.argv.slice(2);

function option(name, fallback) {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
}

if (mode === 'consumer') await consumer(args[0]);
else if (mode === 'producer') await producer(args[0], Number(args[1]));
else await parent(mode);

/** Counts the fs.watch events the consumer's watchers deliver (wrapped before the library binds node:fs's watch). */
function countWatchEvents() {
  const counter = { events: 0 };
  const original = fs.watch;
  fs.watch = (file, options, listener) => original(file, options, (...a) => {
    counter.events += 1;
    listener(...a);
  });
  syncBuiltinESMExports();
  return counter;
}

async function consumer(root) {
  const watched = countWatchEvents();
  const { Worker } = await import(path.join(DIST, 'consumer', 'index.js'));
  const { initQueue, enqueue } = await import(path.join(DIST, 'producer', 'index.js'));
  // Warm-up on a queue of its own: the JIT's first jobs stay out of the figures.
  const warm = await initQueue(path.join(path.dirname(root), `warm-${process.pid}`));
  for (let i = 0; i < 30; i++) await enqueue(warm, { handler: HANDLER, payload: { i } });
  const drain = new Worker({ queues: [warm], commands: false, mode: 'drain' });
  drain.handle(HANDLER, () => null);
  await drain.run();
  let done = 0;
  let unreported = 0;
  let timer;
  const report = () => {
    timer = undefined;
    if (unreported > 0) process.stdout.write(`D ${unreported}\n`);
    unreported = 0;
  };
  const worker = new Worker({
    queues: [root],
    concurrency: 1,
    commands: false,
    mode: 'serve',
    onEvent: (event) => {
      if (event.type === 'finished') {
        done++;
        unreported++;
        timer ??= setTimeout(report, 20);
      } else if (event.type === 'error') process.stderr.write(`consumer: ${event.error.message}\n`);
    },
  });
  worker.handle(HANDLER, (ctx) => ({ seq: ctx.payload.seq }));
  // Wake-ups: calls of the worker's wake() (a watch event or a job's end that woke the loop).
  let wakes = 0;
  const wake = worker.wake?.bind(worker);
  if (wake !== undefined) worker.wake = () => { wakes++; wake(); };
  const running = worker.run();
  while (!existsSync(path.join(root, 'workers', `${worker.id}.json`))) await new Promise((r) => setTimeout(r, 5));
  process.stdout.write('READY\n');
  const lines = readline.createInterface({ input: process.stdin });
  let cpu0;
  let events0 = 0;
  let scans0 = 0;
  let raced0 = 0;
  for await (const line of lines) {
    if (line === 'GO') {
      cpu0 = process.cpuUsage();
      events0 = watched.events;
      wakes = 0;
      scans0 = worker.summary?.scans ?? 0;
      raced0 = worker.summary?.raced ?? 0;
      done = 0;
      worker.wake(); // the queue may just have been resumed (--backlog)
    } else if (line === 'STOP') break;
  }
  worker.stop();
  const s = await running;
  clearTimeout(timer);
  report();
  const cpu = process.cpuUsage(cpu0);
  process.stdout.write(`R ${JSON.stringify({ done, cpu_us: cpu.user + cpu.system, scans: s.scans - scans0, raced: s.raced - raced0, watch_events: watched.events - events0, wakes })}\n`);
  process.exit(0);
}

async function producer(root, n) {
  const { openQueue, enqueue } = await import(path.join(DIST, 'producer', 'index.js'));
  const queue = await openQueue(root);
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < n; i++) await enqueue(queue, { handler: HANDLER, payload: { seq: i, pad: 'x'.repeat(400) } });
  const cpu = process.cpuUsage(cpu0);
  process.stdout.write(`R ${JSON.stringify({ cpu_us: cpu.user + cpu.system })}\n`);
}

/** strace -c's table: calls per syscall name. */
function straceCalls(file) {
  const calls = {};
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$/.exec(line);
    if (m) calls[m[2]] = Number(m[1]);
    const t = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?total\s*$/.exec(line);
    if (t) calls.total = Number(t[1]);
  }
  return calls;
}

function child(argv, onLine) {
  const p = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
  const rl = readline.createInterface({ input: p.stdout });
  rl.on('line', onLine);
  const exited = new Promise((resolve) => p.on('exit', resolve));
  return { p, exited };
}

async function parent(dir) {
  if (dir === undefined) throw new Error('usage: node bench/consumer-pool-costs.mjs DIR [--jobs N] [--procs 1,2,4] [--strace]');
  const jobs = Number(option('--jobs', '600'));
  const procs = option('--procs', '1,2,4,8,16').split(',').map(Number);
  const strace = args.includes('--strace');
  const { initQueue } = await import(path.join(DIST, 'producer', 'index.js'));
  const rows = [];
  const dists = option('--dists', `this=${path.dirname(DIST)}`).split(',').map((d) => d.split('='));
  for (const n of procs) for (const [label, distDir] of dists) {
    process.env.FSJOB_POOL_DIST = distDir;
    const base = path.join(dir, `pool-${n}-${process.pid}`);
    rmSync(base, { recursive: true, force: true });
    const root = path.join(base, 'q');
    await initQueue(root);
    const backlog = args.includes('--backlog');
    // A backlog is enqueued while the queue is paused (PAUSE-1: an entry named pause.json of any kind), resumed at GO.
    if (backlog) writeFileSync(path.join(root, 'pause.json'), 'paused by bench/consumer-pool-costs.mjs\n');
    let ready = 0;
    let done = 0;
    const results = [];
    const consumers = [];
    let allReady;
    const readyP = new Promise((r) => (allReady = r));
    let allDone;
    const doneP = new Promise((r) => (allDone = r));
    for (let i = 0; i < n; i++) {
      const out = path.join(base, `strace-${i}.txt`);
      const argv = [process.execPath, HERE, 'consumer', root];
      const c = child(strace ? ['strace', '-f', '-c', '-o', out, ...argv] : argv, (line) => {
        if (line === 'READY' && ++ready === n) allReady();
        else if (line.startsWith('D ')) {
          done += Number(line.slice(2));
          if (done >= jobs) allDone();
        } else if (line.startsWith('R ')) results.push(JSON.parse(line.slice(2)));
      });
      consumers.push({ ...c, out });
    }
    await readyP;
    // --backlog: every job enqueued before GO, so the consumers drain a queue that is never empty (all race for its head).
    let produced;
    if (backlog) {
      const pre = child([process.execPath, HERE, 'producer', root, String(jobs)], (line) => {
        if (line.startsWith('R ')) produced = JSON.parse(line.slice(2));
      });
      await pre.exited;
    }
    if (backlog) rmSync(path.join(root, 'pause.json'));
    for (const c of consumers) c.p.stdin.write('GO\n');
    // The strace -c of a consumer starts at its exec: the GO mark is the warm-up's end only for the other figures.
    const t0 = performance.now();
    const prod = backlog ? { exited: Promise.resolve() } : child([process.execPath, HERE, 'producer', root, String(jobs)], (line) => {
      if (line.startsWith('R ')) produced = JSON.parse(line.slice(2));
    });
    await prod.exited;
    await doneP;
    const wallMs = performance.now() - t0;
    for (const c of consumers) c.p.stdin.write('STOP\n');
    await Promise.all(consumers.map((c) => c.exited));
    const sum = (k) => results.reduce((a, r) => a + r[k], 0);
    const row = {
      build: label,
      procs: n,
      rate: Math.round((jobs / wallMs) * 1000),
      cpu_ms_job: +(sum('cpu_us') / 1000 / jobs).toFixed(3),
      producer_cpu_ms_job: +(produced.cpu_us / 1000 / jobs).toFixed(3),
      scans_job: +(sum('scans') / jobs).toFixed(2),
      raced_job: +(sum('raced') / jobs).toFixed(3),
      watch_events_job: +(sum('watch_events') / jobs).toFixed(2),
      wakes_job: +(sum('wakes') / jobs).toFixed(2),
    };
    if (strace) {
      const total = {};
      for (const c of consumers) for (const [k, v] of Object.entries(straceCalls(c.out))) total[k] = (total[k] ?? 0) + v;
      // Less the warm-up's 30 jobs per process (measured alone: they are a full job's calls each, roughly).
      const per = (k) => +((total[k] ?? 0) / (jobs + 30 * n)).toFixed(2);
      // Every system call's count per job, on stderr (the table keeps the few above).
      process.stderr.write(`${label} ${n}: ${JSON.stringify(Object.fromEntries(Object.keys(total).sort((x, y) => total[y] - total[x]).map((k) => [k, per(k)])))}\n`);
      Object.assign(row, { syscalls_job: per('total'), getdents64_job: per('getdents64'), epoll_wait_job: per('epoll_wait'), linkat_job: per('linkat') + per('link'), fsync_job: per('fsync') + per('fdatasync'), openat_job: per('openat'), statx_job: per('statx') + per('newfstatat') + per('lstat') });
    }
    rows.push(row);
    console.log(JSON.stringify(row));
    rmSync(base, { recursive: true, force: true });
  }
  console.table(rows);
}
