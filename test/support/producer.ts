/**
 * Fixtures for the producer's tests: a fresh queue, a listing of everything
 * under a directory (to assert what was and was not written), records
 * written through the records layer to simulate a consumer, and a fault
 * injector that fails the k-th mutating filesystem call through the seam.
 */
import * as nodeFs from 'node:fs/promises';
import { lstat, readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { FileHandle } from 'node:fs/promises';
import { initQueue, openQueue, type Queue } from '../../src/model/queue.ts';
import { publishRecord, createExclusive, type SafeFsSeam, type SafeHandle } from '../../src/fs/safefs.ts';
import { encodeRecord, type ClaimRecord, type ReceiptRecord } from '../../src/records/codec.ts';
import { genRecordName } from '../../src/model/layout.ts';
import { removeReadyEntry } from '../../src/model/ready.ts';
import { LEASE_DEFAULT } from '../../src/base/constants.ts';
import { claimRecord, deadOwner, endRecord, execRecord, receiptRecord } from '../../conformance/runner/fixtures.ts';
import { selfIdentity, type Identity } from '../../src/model/identity.ts';
import { enqueue } from '../../src/producer/index.ts';
import { freshDir } from './helpers.ts';

export async function freshQueue(label = 'fsjob-producer'): Promise<Queue> {
  const dir = await freshDir(label);
  return initQueue(join(dir, 'q'));
}

/** Every path under `dir` (relative, sorted), with a kind suffix: "/" directory, "@" symlink. */
export async function tree(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (current: string): Promise<void> => {
    for (const name of (await readdir(current)).sort()) {
      const full = join(current, name);
      const stats = await lstat(full);
      const rel = relative(dir, full);
      if (stats.isSymbolicLink()) out.push(`${rel}@`);
      else if (stats.isDirectory()) {
        out.push(`${rel}/`);
        await walk(full);
      } else out.push(rel);
    }
  };
  await walk(dir);
  return out;
}

export async function entries(dir: string): Promise<string[]> {
  return (await readdir(dir)).sort();
}

export async function modeOf(path: string): Promise<number> {
  return (await lstat(path)).mode & 0o777;
}

/** The identity of a process that has exited: its pid names nobody (or somebody else). */
export const deadIdentity = deadOwner;

const publish = (queue: Queue, id: string, name: string, bytes: Buffer): Promise<string> =>
  publishRecord(queue.paths.job(id), name, bytes, 'link', queue.fsOptions);

/** Claim generation `gen` of a job as this process (a consumer would). */
export async function writeClaim(queue: Queue, id: string, gen: number, owner?: Identity, workerId: string | null = null): Promise<ClaimRecord> {
  const claim = claimRecord(id, gen, owner ?? (await selfIdentity()), Date.now(), LEASE_DEFAULT, { worker_id: workerId });
  await publish(queue, id, genRecordName('claim', gen), encodeRecord('claim', claim));
  return claim;
}

export async function writeExec(queue: Queue, id: string, gen: number, attempt: number): Promise<void> {
  const exec = execRecord(id, gen, await selfIdentity(), { attempt, group: null });
  await publish(queue, id, genRecordName('exec', gen), encodeRecord('exec', exec));
}

export async function writeEnd(queue: Queue, id: string, gen: number, exit = 1): Promise<void> {
  const end = endRecord(id, gen, { status: { exit, signal: null } });
  await publish(queue, id, genRecordName('end', gen), encodeRecord('end', end));
}

/** An output file of generation `gen` with `bytes`, created exclusively and fsynced (EXEC-1, RCPT-2). */
export async function writeOutput(queue: Queue, id: string, stream: 'stdout' | 'stderr', gen: number, bytes: Buffer | string): Promise<SafeHandle> {
  const handle = await createExclusive(queue.paths.job(id), `${stream}.${gen}`, 0o600, queue.fsOptions);
  await handle.write(typeof bytes === 'string' ? Buffer.from(bytes) : bytes);
  await handle.sync();
  return handle;
}

/** A receipt as a consumer would publish it; claims generation `gen` first unless it exists. */
export async function writeReceipt(queue: Queue, id: string, fields: Partial<ReceiptRecord> & { gen?: number } = {}): Promise<ReceiptRecord> {
  const gen = fields.gen ?? 1;
  const receipt = receiptRecord(id, gen, await selfIdentity(), { stdout: null, stderr: null, ...fields });
  const names = await readdir(queue.paths.job(id));
  if (!names.includes(genRecordName('claim', gen))) await writeClaim(queue, id, gen);
  await publish(queue, id, 'receipt.json', encodeRecord('receipt', receipt));
  return receipt;
}

/** writeReceipt, then the job's ready entry removed (READY-2), as a consumer finishes a job: what a waiter on many sees. */
export async function finishJob(queue: Queue, id: string, fields: Partial<ReceiptRecord> & { gen?: number } = {}): Promise<ReceiptRecord> {
  const receipt = await writeReceipt(queue, id, fields);
  await removeReadyEntry(queue, id);
  return receipt;
}

/**
 * Four jobs for a cancel of several ids (`fsjob cancel A B C`, fsjob-sh's):
 * two nobody claimed (one of them held, so gated), one finished (a receipt)
 * and one claimed by this live process (CANCEL-2 leaves it to its owner).
 */
export async function cancelManyJobs(queue: Queue): Promise<{ first: string; finished: string; claimed: string; held: string }> {
  const [first, finished, claimed, held] = [
    await enqueue(queue, { argv: ['true'] }),
    await enqueue(queue, { argv: ['true'] }),
    await enqueue(queue, { argv: ['true'] }),
    await enqueue(queue, { argv: ['true'], hold: true }),
  ];
  await writeReceipt(queue, finished.id);
  await writeClaim(queue, claimed.id, 1);
  return { first: first.id, finished: finished.id, claimed: claimed.id, held: held.id };
}

export type FaultCall = 'create' | 'mkdir' | 'link' | 'rename' | 'write' | 'sync' | 'chmod';

/**
 * A node:fs/promises seam that fails the k-th mutating call (1-based) with
 * `errno`; every other call goes to the real filesystem. `calls` records
 * what was attempted, so a test can run k = 1, 2, ... until nothing fails.
 */
export function faultyFs(failAt: number, errno = 'ENOSPC'): { fs: SafeFsSeam; calls: string[] } {
  const calls: string[] = [];
  const trip = (what: FaultCall, detail: string): void => {
    calls.push(`${what} ${detail}`);
    if (calls.length === failAt) throw Object.assign(new Error(`${errno}: injected at ${what} ${detail}`), { code: errno, errno: -28, syscall: what });
  };
  const wrapHandle = (handle: FileHandle, path: string): FileHandle =>
    new Proxy(handle, {
      get(target, prop, receiver) {
        const value: unknown = Reflect.get(target, prop, receiver);
        if (typeof value !== 'function') return value;
        if (prop === 'write' || prop === 'sync' || prop === 'chmod') {
          return async (...args: unknown[]) => {
            trip(prop, path);
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        }
        return (value as (...a: unknown[]) => unknown).bind(target);
      },
    });
  const fs: SafeFsSeam = {
    ...nodeFs,
    open: (async (path: string, flags?: number | string, mode?: number) => {
      if (typeof flags === 'number' && (flags & nodeFs.constants.O_CREAT) !== 0) trip('create', String(path));
      return wrapHandle(await nodeFs.open(path, flags, mode), String(path));
    }) as SafeFsSeam['open'],
    mkdir: (async (path: string, options?: unknown) => {
      trip('mkdir', String(path));
      return nodeFs.mkdir(path, options as never);
    }) as SafeFsSeam['mkdir'],
    link: async (existing, target) => {
      trip('link', String(target));
      return nodeFs.link(existing, target);
    },
    rename: async (from, to) => {
      trip('rename', String(to));
      return nodeFs.rename(from, to);
    },
  };
  return { fs, calls };
}

/** The queue at `root` reopened with a seam. */
export function withSeam(root: string, fs: SafeFsSeam): Promise<Queue> {
  return openQueue(root, { fs });
}
