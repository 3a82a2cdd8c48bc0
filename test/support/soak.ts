/**
 * The soak of the battery (issue 6): producer processes keep enqueuing
 * (`fsjob enqueue --batch -`, one request line at a time) and `fsjob work`
 * processes keep draining, while a chaos loop hits a random worker at random
 * moments with one of:
 *
 * - `kill`: SIGKILL the worker; its guardian stops its commands (WORKER-2);
 * - `crash`: SIGKILL the guardian, then the worker: its commands keep running
 *   until a recoverer proves them stopped or stops them (RECOV-1);
 * - `guardian`: SIGKILL the guardian alone: the worker must restart it before
 *   it starts another command (WORKER-2, fail closed);
 * - `term`: SIGTERM, the graceful shutdown of WORKER-3;
 *
 * and starts a replacement for every worker it took down. Then producers
 * stop, every worker is SIGKILLed, and `fsjob recover` and a final
 * `fsjob work --drain` finish the queue. The caller checks the invariants.
 */
import { once } from 'node:events';
import type { JobRequest } from '../../src/records/codec.ts';
import { batteryRequest, childrenOf, isDead, rng, runFsjob, startFsjob, type FsjobProcess } from './battery.ts';
import { delay, waitFor } from './consumer.ts';
import { GUARDIAN_NAME } from '../../src/consumer/guardian.ts';

export interface SoakOptions {
  root: string;
  /** The battery start log (outside the queue). */
  log: string;
  /** Working directory of the jobs (outside the queue). */
  cwd: string;
  seconds: number;
  workers?: number;
  producers?: number;
  seed?: number;
}

export type ChaosAction = 'kill' | 'crash' | 'guardian' | 'term';

export interface SoakReport {
  /** Ids the producers printed: accepted, durable (ENQ-4). */
  accepted: Set<string>;
  requested: number;
  /** Producer lines refused (a producer's error output). */
  refused: string[];
  kills: Record<ChaosAction, number>;
  workersStarted: number;
  recover: { code: number | null; report: { claims_broken: unknown[]; receipts: unknown[]; requeued: unknown[]; unproven: unknown[]; skipped: unknown[] } };
  finalDrain: { code: number | null; stderr: string }[];
}

const WORKER_ARGS = (root: string): string[] => ['work', '--queue', root, '--concurrency', '2', '--lease', '3'];

export async function soak(options: SoakOptions): Promise<SoakReport> {
  const random = rng(options.seed ?? 600);
  let endAt = Number.POSITIVE_INFINITY;
  const kills: Record<ChaosAction, number> = { kill: 0, crash: 0, guardian: 0, term: 0 };
  const workers: FsjobProcess[] = [];
  /** Every worker ever started, so none outlives the soak. */
  const all: FsjobProcess[] = [];
  const startWorker = (): FsjobProcess => {
    const worker = startFsjob(WORKER_ARGS(options.root));
    all.push(worker);
    return worker;
  };
  try {
    return await run();
  } finally {
    // On success they are gone already; after a failure none may outlive the soak.
    for (const worker of all) worker.child.kill('SIGKILL');
  }

  async function run(): Promise<SoakReport> {
  for (let i = 0; i < (options.workers ?? 3); i++) workers.push(startWorker());
  // The chaos clock starts once the first workers are up (have their guardian): on a busy machine loading takes a while.
  await waitFor('the first workers to start', () => workers.every((w) => childrenOf(w.pid, GUARDIAN_NAME).length > 0), 120_000);
  endAt = Date.now() + options.seconds * 1000;

  const accepted = new Set<string>();
  const refused: string[] = [];
  let requested = 0;
  const produce = async (): Promise<void> => {
    const producer = startFsjob(['enqueue', '--queue', options.root, '--batch', '-'], {}, { stdin: 'pipe' });
    const stdin = producer.child.stdin as NonNullable<typeof producer.child.stdin>;
    while (Date.now() < endAt) {
      const request: JobRequest = batteryRequest(random, options.log, options.cwd, {
        laneShare: 0.2,
        hold: (r) => (r() < 0.3 ? '0' : (0.2 + r() * 0.8).toFixed(2)),
      });
      requested += 1;
      if (!stdin.write(`${JSON.stringify(request)}\n`)) await once(stdin, 'drain');
      await delay(100 + random() * 700);
    }
    stdin.end();
    const exit = await producer.exited;
    for (const line of producer.stdout.split('\n')) if (line !== '') accepted.add(line);
    if (exit.code !== 0) refused.push(producer.stderr);
  };

  const chaos = async (): Promise<void> => {
    while (Date.now() < endAt) {
      await delay(500 + random() * 1500);
      // Victims are workers that are up (they have a guardian): a worker still loading has no work to lose.
      const up = workers.map((worker, index) => ({ index, guardians: childrenOf(worker.pid, GUARDIAN_NAME) })).filter((w) => w.guardians.length > 0);
      if (up.length === 0) continue;
      const { index, guardians } = up[Math.floor(random() * up.length)] as (typeof up)[number];
      const victim = workers[index] as FsjobProcess;
      const roll = random();
      const action: ChaosAction = roll < 0.4 ? 'kill' : roll < 0.6 ? 'crash' : roll < 0.7 ? 'guardian' : 'term';
      if (action === 'guardian') {
        for (const pid of guardians) process.kill(pid, 'SIGKILL');
        kills.guardian += 1;
        continue;
      }
      if (action === 'crash') for (const pid of guardians) process.kill(pid, 'SIGKILL');
      victim.child.kill(action === 'term' ? 'SIGTERM' : 'SIGKILL');
      kills[action] += 1;
      // A terminated worker shuts down in the background (up to CANCEL_GRACE); its slot is refilled now.
      workers[index] = startWorker();
    }
  };

  await Promise.all([chaos(), ...Array.from({ length: options.producers ?? 2 }, produce)]);

  // The end: everything still running is SIGKILLed, as by a power cut of the consumers only.
  for (const worker of all) worker.child.kill('SIGKILL');
  await Promise.all(all.map((worker) => worker.exited));
  await waitFor('every worker to be gone', async () => (await Promise.all(all.map((w) => isDead(w.pid)))).every(Boolean), 60_000);
  const recovered = await runFsjob(['recover', '--json', '--queue', options.root]);
  const recover = { code: recovered.code, report: JSON.parse(recovered.stdout) as SoakReport['recover']['report'] };
  const finalDrain = await Promise.all([0, 1].map(() => runFsjob(['work', '--queue', options.root, '--drain', '--lease', '3'])));
  return { accepted, requested, refused, kills, workersStarted: all.length, recover, finalDrain: finalDrain.map((d) => ({ code: d.code, stderr: d.stderr })) };
  }
}
