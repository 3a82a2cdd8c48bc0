/**
 * fsjob at library level: payload jobs through src/producer `enqueue` and the
 * src/consumer Worker's handler API (no command is spawned). Children of
 * bench/run.ts speaking the READY/GO/STOP protocol of lib/proc.ts.
 *
 *   producer <queue> <n> [--latency]   enqueue n payload jobs (--latency: each after the previous has its receipt)
 *   consumer <queue> [--concurrency k] a Worker serving handler `bench` until STOP; prints D per receipt
 *   claim <queue> <samples>            claim latency: enqueue one job, time claimNext(), complete it; repeat
 *
 * Latencies are wall-clock microseconds from just before enqueue() was called
 * (the payload carries that instant) to the handler's start (start_us) and to
 * the consumer's `finished` event, which follows the receipt's link and
 * directory fsync (latencies_us).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { claimNext, Worker } from '../src/consumer/index.ts';
import { enqueue, openQueue, waitFor } from '../src/producer/index.ts';
import { childProtocol, childResult } from './lib/proc.ts';
import { percentile, wallMicros } from './lib/stats.ts';

const HANDLER = 'bench';

interface BenchPayload {
  created_us: number;
  seq: number;
  pad: string;
}

function payload(seq: number): BenchPayload {
  // About as many bytes as the SQLite baseline's payload.
  return { created_us: wallMicros(), seq, pad: 'x'.repeat(400) };
}

async function producer(root: string, n: number, latencyMode: boolean): Promise<void> {
  const queue = await openQueue(root);
  const proto = childProtocol();
  await proto.go;
  const t0 = wallMicros();
  const enqueueUs: number[] = [];
  for (let i = 0; i < n; i++) {
    const start = wallMicros();
    const { id } = await enqueue(queue, { handler: HANDLER, payload: { ...payload(i), created_us: start } });
    enqueueUs.push(wallMicros() - start);
    if (latencyMode) await waitFor(queue, id, { pollMs: 50 });
  }
  const t1 = wallMicros();
  childResult({ t0_us: t0, t1_us: t1, n, enqueue_p50_us: percentile(enqueueUs, 50), enqueue_p99_us: percentile(enqueueUs, 99) });
}

async function consumer(root: string, concurrency: number): Promise<void> {
  const created = new Map<string, number>();
  const latencies: number[] = [];
  const starts: number[] = [];
  let done = 0;
  let lastUs = 0;
  const worker = new Worker({
    queues: [root],
    concurrency,
    commands: false,
    mode: 'serve',
    onEvent: (event) => {
      if (event.type === 'finished') {
        lastUs = wallMicros();
        const c = created.get(event.job_id);
        if (c !== undefined) latencies.push(lastUs - c);
        created.delete(event.job_id);
        done++;
        process.stdout.write('D\n');
      } else if (event.type === 'error') {
        process.stderr.write(`fsjob-lib consumer: ${event.error.message}\n`);
      }
    },
  });
  worker.handle(HANDLER, (ctx) => {
    const p = ctx.payload as unknown as BenchPayload;
    const now = wallMicros();
    created.set(ctx.jobId, p.created_us);
    starts.push(now - p.created_us);
    return { seq: p.seq };
  });
  const running = worker.run();
  // READY once the worker is set up: it registers after its READY-4 scan.
  const registration = path.join(root, 'workers', `${worker.id}.json`);
  while (!existsSync(registration)) await new Promise((resolve) => setTimeout(resolve, 5));
  const proto = childProtocol();
  proto.onStop(() => worker.stop());
  await proto.go;
  await running;
  childResult({ done, last_us: lastUs, latencies_us: latencies, start_us: starts });
}

async function claim(root: string, samples: number): Promise<void> {
  const queue = await openQueue(root);
  const proto = childProtocol();
  await proto.go;
  const claimUs: number[] = [];
  const cycleUs: number[] = [];
  for (let i = 0; i < samples; i++) {
    await enqueue(queue, { handler: HANDLER, payload: payload(i) });
    const t0 = wallMicros();
    const job = await claimNext(queue, { handlers: [HANDLER] });
    const t1 = wallMicros();
    if (job === null) throw new Error('claim: claimNext found no job although one was just enqueued');
    await job.complete({ result: null });
    claimUs.push(t1 - t0);
    cycleUs.push(wallMicros() - t0);
  }
  childResult({ samples, claim_us: claimUs, claim_complete_us: cycleUs });
}

const [mode, root, ...rest] = process.argv.slice(2);
if (root === undefined) throw new Error('usage: fsjob-lib.ts <producer|consumer|claim> <queue> ...');
const option = (name: string, fallback: number): number => {
  const i = rest.indexOf(name);
  return i >= 0 ? Number(rest[i + 1]) : fallback;
};
if (mode === 'producer') await producer(root, Number(rest[0]), rest.includes('--latency'));
else if (mode === 'consumer') await consumer(root, option('--concurrency', 1));
else if (mode === 'claim') await claim(root, Number(rest[0]));
else throw new Error(`unknown mode ${mode}`);
process.exit(0);
