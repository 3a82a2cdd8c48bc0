/** Shared fixtures of the consumer suites: run a worker in-process, read what is on disk, wait boundedly. */
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import type { Queue } from '../../src/model/queue.ts';
import type { EndRecord, ReceiptRecord } from '../../src/records/codec.ts';
import { Worker, type WorkerOptions, type WorkerSummary } from '../../src/consumer/index.ts';
import type { ConsumerEvent } from '../../src/consumer/index.ts';

export interface DrainResult {
  summary: WorkerSummary;
  events: ConsumerEvent[];
}

/** Runs a Worker over `queue` until it has drained it (in this process). */
export async function drain(queue: Queue, options: Partial<WorkerOptions> = {}, setup?: (worker: Worker) => void): Promise<DrainResult> {
  const events: ConsumerEvent[] = [];
  const worker = new Worker({ queues: [queue], mode: 'drain', ...options, onEvent: (event) => events.push(event) });
  setup?.(worker);
  const summary = await worker.run();
  return { summary, events };
}

export function jobFiles(queue: Queue, id: string): string[] {
  return readdirSync(queue.paths.job(id)).sort();
}

export function readJson<T>(path: string): T {
  return JSON.parse(readFileSync(path, 'utf8')) as T;
}

export function receiptOf(queue: Queue, id: string): ReceiptRecord {
  return readJson<ReceiptRecord>(queue.paths.jobFile(id, 'receipt.json'));
}

export function hasReceipt(queue: Queue, id: string): boolean {
  return existsSync(queue.paths.jobFile(id, 'receipt.json'));
}

export function endOf(queue: Queue, id: string, gen: number): EndRecord {
  return readJson<EndRecord>(queue.paths.jobFile(id, `end.${gen}.json`));
}

export function readyEntries(queue: Queue): string[] {
  return readdirSync(queue.paths.dir('ready')).filter((name) => !name.startsWith('.')).sort();
}

export const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` every 50 ms until it returns a value other than undefined/false, or fails after `ms`. */
export async function waitFor<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await delay(50);
  }
}

import { selfIdentity, type Identity } from '../../src/model/identity.ts';
import { encodeRecord, type Group } from '../../src/records/codec.ts';
import { publishRecord } from '../../src/fs/safefs.ts';
import { LEASE_DEFAULT } from '../../src/base/constants.ts';
import { cancelRecord, claimRecord, deadOwner, execRecord } from '../../conformance/runner/fixtures.ts';

/** The identity of a process that has exited: its pid is free (or reused), so its owner is dead. */
export const deadIdentity = deadOwner;

/** Publishes claim.<gen>.json for `owner` through the core primitive (as another consumer would). */
export async function publishClaim(queue: Queue, id: string, gen: number, owner: Identity, claimedMs = Date.now(), leaseMs = LEASE_DEFAULT): Promise<void> {
  await publishRecord(queue.paths.job(id), `claim.${gen}.json`, encodeRecord('claim', claimRecord(id, gen, owner, claimedMs, leaseMs)), 'link', queue.fsOptions);
}

export async function publishExec(queue: Queue, id: string, gen: number, attempt: number, group: Group | null): Promise<void> {
  const record = execRecord(id, gen, await selfIdentity(), { attempt, group });
  await publishRecord(queue.paths.job(id), `exec.${gen}.json`, encodeRecord('exec', record), 'link', queue.fsOptions);
}

export async function publishCancel(queue: Queue, id: string, force: boolean): Promise<void> {
  await publishRecord(queue.paths.job(id), force ? 'cancel-force.json' : 'cancel.json', encodeRecord('cancel', cancelRecord(id, force, await selfIdentity())), 'link', queue.fsOptions);
}

/** Starts a serving worker in this process; returns it and the promise of its summary. */
export function serve(queue: Queue, options: Partial<WorkerOptions> = {}): { worker: Worker; done: Promise<WorkerSummary>; events: ConsumerEvent[] } {
  const events: ConsumerEvent[] = [];
  const worker = new Worker({ queues: [queue], mode: 'serve', ...options, onEvent: (event) => events.push(event) });
  return { worker, done: worker.run(), events };
}

export function fileExists(path: string): boolean {
  return existsSync(path);
}
