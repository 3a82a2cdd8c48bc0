/**
 * Deep queues for the scale measurements, built fast: valid record templates
 * made here with the reference encoder (encodeRecord checks each against its
 * schema), stamped per job by bench/fill.c with direct writes and one sync.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { selfIdentity } from '../../src/model/identity.ts';
import { initQueue } from '../../src/model/queue.ts';
import { encodeRecord } from '../../src/records/codec.ts';
import { claimRecord, execRecord, receiptRecord, specRecord } from '../../conformance/runner/fixtures.ts';
import { BENCH_DIR, run, runJson } from './proc.ts';

export const PLACEHOLDER_ID = '1111111111111111111-aaaaaaaaaaaaaaaa';
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

export type JobKind = { handler: string } | { argv: [string, ...string[]] };

/** Writes the files of one finished job (spec, claim, exec, empty outputs, receipt) into dir as templates. */
export async function writeTemplates(dir: string, kind: JobKind): Promise<void> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const who = await selfIdentity();
  const id = PLACEHOLDER_ID;
  const ms = Date.now() - 3_600_000;
  const job = 'handler' in kind ? { handler: kind.handler, payload: { n: 1 } } : { argv: kind.argv };
  // The sample-record factory of conformance/runner/fixtures.ts: the reference producer's defaults, valid records.
  const { spec } = specRecord(id, { ...job, cwd: os.tmpdir() }, who, ms);
  const write = (name: string, bytes: Buffer) => writeFileSync(path.join(dir, name), bytes);
  write('spec.json', encodeRecord('spec', spec, { expectedJobId: id }));
  write('claim.1.json', encodeRecord('claim', claimRecord(id, 1, who, ms + 1)));
  write('exec.1.json', encodeRecord('exec', execRecord(id, 1, who, { group: null, recorded_ms: ms + 2 })));
  // Every recorded execution has its output files, payload jobs too (EXEC-1, RCPT-5): empty here.
  write('stdout.1', Buffer.alloc(0));
  write('stderr.1', Buffer.alloc(0));
  const output = (gen: number) => ({ gen, bytes_total: 0, bytes_kept: 0, truncated: false, sha256: EMPTY_SHA256 });
  write('receipt.json', encodeRecord('receipt', receiptRecord(id, 1, who, { started_ms: ms + 2, finished_ms: ms + 3, stdout: output(1), stderr: output(1) })));
}

let fillBinary: string | undefined;

async function fillPath(): Promise<string> {
  if (fillBinary !== undefined) return fillBinary;
  const source = path.join(BENCH_DIR, 'fill.c');
  const hash = createHash('sha256').update(readFileSync(source)).digest('hex').slice(0, 16);
  const dir = path.join(os.tmpdir(), 'fsjob-bench-cache');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const out = path.join(dir, `fill-${hash}`);
  if (!existsSync(out)) {
    const cc = await run(['cc', '-O2', '-Wall', '-o', `${out}.${process.pid}`, source]);
    if (cc.status !== 0) throw new Error(`cc bench/fill.c failed: ${cc.stderr}`);
    renameSync(`${out}.${process.pid}`, out);
  }
  fillBinary = out;
  return out;
}

/**
 * A queue at root (created with the reference init) holding n finished or
 * queued jobs whose ids sort before any job enqueued later. Returns seconds taken.
 */
export async function buildQueue(root: string, n: number, state: 'finished' | 'queued', kind: JobKind, scratch: string): Promise<number> {
  const t0 = performance.now();
  await initQueue(root);
  const templates = path.join(scratch, `templates-${'handler' in kind ? 'payload' : 'command'}`);
  await writeTemplates(templates, kind);
  if (n > 0) {
    // Ids a day in the past: older than anything the bench enqueues afterwards.
    const firstNs = (BigInt(Date.now() - 86_400_000) * 1_000_000n).toString();
    await runJson([await fillPath(), root, String(n), state, templates, firstNs]);
  }
  return (performance.now() - t0) / 1000;
}
