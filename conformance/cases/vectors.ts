/**
 * The record vectors of conformance/vectors/ run through the implementation
 * wherever it has a reader (I7):
 *
 * - spec: each vector becomes the spec.json of a job; a consumer must reject
 *   every invalid one with a `rejected` receipt whose reason is
 *   `invalid_spec` (or `unsupported_version` for VER-1), and must not reject
 *   a valid one as invalid (CLAIM-6.1);
 * - request: each vector is a request file; a producer must accept every
 *   valid one and refuse every invalid one without writing anything (ENQ-1);
 * - queue: each vector is fsjob.json; an invalid one makes the queue refused
 *   as a whole (LAYOUT-2, VER-1), a valid one (newer minor) is used (VER-3);
 * - claim, exec, end, receipt: an invalid record is never acted on: the job
 *   is not run, the claim not broken, the record not replaced (REC-4).
 *
 * By default one vector per rule (valid or not, finding, clause) runs;
 * --all-vectors runs every one. Job ids inside a vector are replaced by fresh
 * ones of the same length, consistently, so each vector gets its own job.
 */
import { existsSync, readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { mkdir, readFile, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readyEntryName } from '../../src/model/layout.ts';
import { GATED_SUFFIX } from '../../src/records/names.ts';
import { parseRecordBytes, recordNameOf, type VectorCase, type VectorFile } from '../../src/records/codec.ts';
import { type CaseContext, type ConformanceCase, countBy, readStarts } from '../runner/case.ts';
import { claimRecord, deadOwner, execRecord } from '../runner/fixtures.ts';
import { entriesOf, listing } from '../runner/inspect.ts';
import { describeExit } from '../runner/process.ts';
import type { Failure } from '../runner/report.ts';
import { newJobId } from '../../src/producer/id.ts';
import { createQueue, plantBytes, plantRecord, reopen, stageJob, type Staged } from '../runner/stage.ts';
import { logged } from './jobs.ts';

// As ../../conformance/: this module is two levels below the root in the checkout and in dist/, where it may be in a chunk (tools/build/cli-bundle.ts).
const VECTORS = fileURLToPath(new URL('../../conformance/vectors/', import.meta.url));
const JOB_ID = /[0-9]{19}-[0-9a-f]{16}/g;

/** A vector file: conformance/vectors/<type>.json in a checkout, <type>.json.gz in dist/ (tools/build/build.ts ships them gzipped). */
export function loadVectors(type: string): VectorFile {
  const file = path.join(VECTORS, `${type}.json`);
  const bytes = existsSync(file) ? readFileSync(file) : gunzipSync(readFileSync(`${file}.gz`));
  return JSON.parse(bytes.toString('utf8')) as VectorFile;
}

/** The file bytes of a vector (conformance/vectors/README.md). */
export function vectorBytes(test: VectorCase): Buffer {
  if (test.raw !== undefined) return Buffer.from(test.raw, 'utf8');
  if (test.raw_base64 !== undefined) return Buffer.from(test.raw_base64, 'base64');
  return Buffer.from(`${JSON.stringify(test.data)}\n`, 'utf8');
}

/**
 * The default selection, one vector per rule: every valid vector (each
 * shows a different thing a reader must accept, and refusing any one of
 * them is a failure of its own), every VER-1 vector (each wrong shape of a
 * version is a check of its own: a reader that takes "1.0.0" or "01.0" may
 * well refuse "2.0"), and the first other invalid vector of each (finding,
 * clause), the check a reader makes; --all-vectors runs them all.
 */
export function selectVectors(file: VectorFile, all: boolean): VectorCase[] {
  if (all) return file.tests;
  const seen = new Set<string>();
  return file.tests.filter((test) => {
    if (test.valid || test.clause === 'VER-1') return true;
    const key = `${test.finding ?? ''}|${test.clause}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Replaces every job id in the bytes (and the name) by a fresh one, the same old id always by the same new one. */
export function remapIds(bytes: Buffer, fileName: string | undefined, fixed: Map<string, string> = new Map()): { bytes: Buffer; fileName: string | undefined; map: Map<string, string> } {
  const map = fixed;
  const swap = (text: string): string =>
    text.replace(JOB_ID, (old) => {
      let fresh = map.get(old);
      if (fresh === undefined) {
        fresh = newJobId();
        map.set(old, fresh);
      }
      return fresh;
    });
  // latin1 maps each byte to one character and back, so non-UTF-8 bytes survive.
  const text = swap(bytes.toString('latin1'));
  return { bytes: Buffer.from(text, 'latin1'), fileName: fileName === undefined ? undefined : swap(fileName), map };
}

function label(test: VectorCase): string {
  return `${test.valid ? 'valid' : 'invalid'} ${test.clause}${test.finding === undefined ? '' : ` ${test.finding}`}: ${test.description}`;
}

async function specVectors(ctx: CaseContext): Promise<void> {
  const file = loadVectors('spec');
  const tests = selectVectors(file, ctx.settings.allVectors);
  const root = await ctx.newQueue('vectors');
  const planted: { test: VectorCase; id: string }[] = [];
  for (const test of tests) {
    const { bytes, fileName, map } = remapIds(vectorBytes(test), test.file_name);
    const fromName = fileName === undefined ? undefined : /^jobs\/([^/]+)\/spec\.json$/.exec(fileName)?.[1];
    const data = test.data as { id?: unknown } | undefined;
    const fromData = typeof data?.id === 'string' ? map.get(data.id) : undefined;
    const id = fromName ?? fromData ?? [...map.values()][0] ?? newJobId();
    if (!/^[0-9]{19}-[0-9a-f]{16}$/.test(id)) continue;
    const dir = path.join(root, 'jobs', id);
    await mkdir(dir, { mode: 0o700 });
    await plantBytes(path.join(dir, 'spec.json'), bytes);
    await plantBytes(path.join(root, 'ready', readyEntryName(0, id)), '');
    planted.push({ test, id });
  }
  const consume = await ctx.role('consume', { queue: root });
  const snapshot = await ctx.snapshot(root);
  ctx.check(!consume.timedOut && consume.signal === null, ['I7', 'MANIFEST-2'], 'consume must get through every vector without hanging or crashing', [describeExit(consume)]);
  let rejected = 0;
  for (const { test, id } of planted) {
    const job = snapshot.jobs.get(id);
    const receipt = job?.receipt;
    const evidence = (): string[] => [label(test), ...(receipt === undefined ? [] : [`receipt: ${JSON.stringify(receipt).slice(0, 300)}`]), ...listing(snapshot, new Set([id]))];
    if (test.valid) {
      const wronglyRejected = receipt?.outcome === 'rejected' && (receipt.reason === 'invalid_spec' || receipt.reason === 'unsupported_version');
      ctx.check(!wronglyRejected, [test.clause, 'REC-4', 'CLAIM-6'], `a valid spec was rejected as ${receipt?.reason}: ${test.description}`, evidence);
    } else {
      const reason = test.finding === 'RECORD_VERSION' ? 'unsupported_version' : 'invalid_spec';
      const ok = receipt?.outcome === 'rejected' && receipt.exit_code === 126 && receipt.reason === reason;
      if (ok) rejected += 1;
      ctx.check(ok, [test.clause, 'CLAIM-6', 'I7'], `an invalid spec must get a rejected receipt (126, reason ${reason}); got ${receipt === undefined ? (job?.receiptFindings.length ? 'an invalid receipt' : 'no receipt') : `${receipt.outcome} (${receipt.exit_code}, ${receipt.reason})`}: ${test.description}`, evidence);
    }
  }
  ctx.note(`${planted.length} of ${file.tests.length} spec vectors, ${rejected} rejected`);
}

/**
 * Runs `each` for every item through the case's pool (each item is one or
 * two role processes in a queue of its own) and reports the failures in
 * item order, so the first failure does not depend on which finished first.
 */
async function fanOut<T>(ctx: CaseContext, items: readonly T[], each: (item: T, index: number, fail: (clauses: string[], message: string, evidence: string[]) => void) => Promise<void>): Promise<void> {
  const perItem = await Promise.all(
    items.map((item, index) =>
      ctx.pool.run(async () => {
        const failures: Failure[] = [];
        await each(item, index + 1, (clauses, message, evidence) => failures.push({ clauses, message, evidence }));
        return failures;
      }),
    ),
  );
  for (const failures of perItem) ctx.failures.push(...failures);
}

/** The dependencies a request names and whether its job is gated (GATE-1: after or hold), read leniently from its bytes. */
function gateOfRequest(bytes: Uint8Array): { after: string[]; gated: boolean } {
  try {
    const value = JSON.parse(Buffer.from(bytes).toString('utf8')) as { after?: unknown; hold?: unknown };
    const after = Array.isArray(value.after) ? value.after.map((item: unknown) => String((item as { job_id?: unknown }).job_id)) : [];
    return { after, gated: after.length > 0 || value.hold === true };
  } catch {
    return { after: [], gated: false };
  }
}

async function requestVectors(ctx: CaseContext): Promise<void> {
  const file = loadVectors('request');
  const tests = selectVectors(file, ctx.settings.allVectors).filter((test) => {
    // MANIFEST-2: request files given to a role are compact; a valid request in another form is not the role's input.
    if (!test.valid || test.data !== undefined) return true;
    return parseRecordBytes(vectorBytes(test), 'record').ok;
  });
  const base = await ctx.subdir('vectors');
  await fanOut(ctx, tests, async (test, index, fail) => {
    const root = path.join(base, `q${index}`);
    await createQueue(root);
    const requestFile = path.join(base, `request-${index}.json`);
    await writeFile(requestFile, vectorBytes(test), { mode: 0o600 });
    // AFTER-2: a valid request's dependencies exist (an empty directory is all the producer looks at).
    const gate = test.valid ? gateOfRequest(vectorBytes(test)) : { after: [], gated: false };
    for (const dependency of gate.after) await mkdir(path.join(root, 'jobs', dependency), { mode: 0o700 });
    const result = await ctx.role('produce', { queue: root, request: requestFile });
    const jobs = (await entriesOf(path.join(root, 'jobs'))).map((e) => e.name).filter((name) => !gate.after.includes(name));
    const staged = (await entriesOf(path.join(root, 'tmp'))).filter((e) => !e.name.startsWith('.')).map((e) => e.name);
    const evidence = [label(test), describeExit(result), `jobs/: ${jobs.join(' ') || '(empty)'}`, `tmp/: ${staged.join(' ') || '(empty)'}`];
    if (test.valid) {
      const id = result.stdout.trim();
      const okId = result.code === 0 && jobs.length === 1 && jobs[0] === (gate.gated ? `${id}${GATED_SUFFIX}` : id);
      if (!okId) fail([test.clause, 'ENQ-1', 'REQ-1'], `a valid request must be accepted (exit 0, its id printed, the job in jobs/${gate.gated ? ', gated: GATE-1' : ''}): ${test.description}`, evidence);
      if (okId) {
        const snapshot = await ctx.snapshot(root);
        if (snapshot.jobs.get(id)?.spec === undefined) fail(['SPEC-2', 'VER-4'], `the spec written for a valid request must be valid: ${snapshot.jobs.get(id)?.specFindings[0]?.message ?? ''}`, listing(snapshot));
      }
    } else if (result.code === 0 || result.code === null) {
      fail([test.clause, 'ENQ-1', 'I7'], `an invalid request must be refused (non-zero exit): ${test.description}`, evidence);
    } else if (jobs.length > 0 || staged.length > 0) {
      fail(['ENQ-1', 'ENQ-6', 'I7'], `an invalid request is refused before anything is written, yet something was left: ${test.description}`, evidence);
    }
  });
  ctx.note(`${tests.length} of ${file.tests.length} request vectors`);
}

async function queueVectors(ctx: CaseContext): Promise<void> {
  const file = loadVectors('queue');
  const tests = selectVectors(file, ctx.settings.allVectors);
  const base = await ctx.subdir('vectors');
  // LAYOUT-2 before any vector: a directory with every queue directory but no fsjob.json is not a queue.
  const bare = path.join(base, 'no-record');
  await createQueue(bare);
  await unlink(path.join(bare, 'fsjob.json'));
  const bareRequest = path.join(base, 'request-bare.json');
  await writeFile(bareRequest, `${JSON.stringify({ argv: ['/bin/true'], cwd: base })}\n`, { mode: 0o600 });
  const refused = await ctx.pool.run(() => ctx.role('produce', { queue: bare, request: bareRequest }));
  const bareJobs = await entriesOf(path.join(bare, 'jobs'));
  ctx.check(refused.code !== 0 && bareJobs.length === 0, ['LAYOUT-2', 'I7'], 'a directory without fsjob.json is not a queue: produce must refuse it and write nothing', [describeExit(refused), `jobs/: ${bareJobs.map((e) => e.name).join(' ') || '(empty)'}`]);
  // Every vector goes through produce; consume (the costlier check: a second reader) sees the first valid vector of each clause and the first three invalid ones.
  let invalidSeen = 0;
  const validClauses = new Set<string>();
  const plans = tests.map((test) => {
    const first = test.valid && !validClauses.has(test.clause);
    if (test.valid) validClauses.add(test.clause);
    return { test, withConsume: first || (!test.valid && invalidSeen++ < 3) };
  });
  await fanOut(ctx, plans, async ({ test, withConsume }, index, fail) => {
    const root = path.join(base, `q${index}`);
    const work = path.join(base, `work${index}`);
    await mkdir(work, { mode: 0o700 });
    const log = path.join(work, 'starts.log');
    const queue = await createQueue(root);
    await stageJob(queue, { argv: logged(log, 'victim'), cwd: work });
    const bytes = vectorBytes(test);
    await writeFile(path.join(root, 'fsjob.json'), bytes, { mode: 0o600 });
    const requestFile = path.join(base, `request-${index}.json`);
    await writeFile(requestFile, `${JSON.stringify({ argv: logged(log, 'produced'), cwd: work })}\n`, { mode: 0o600 });
    const produce = await ctx.role('produce', { queue: root, request: requestFile });
    const consume = withConsume ? await ctx.role('consume', { queue: root }) : undefined;
    const starts = countBy(await readStarts(log));
    const after = await readFile(path.join(root, 'fsjob.json')).catch(() => Buffer.alloc(0));
    const evidence = [label(test), describeExit(produce), ...(consume === undefined ? [] : [describeExit(consume)]), `starts: ${[...starts].map(([k, v]) => `${k} x${v}`).join(', ') || 'none'}`];
    if (test.valid) {
      const ran = !withConsume || (starts.get('victim') === 1 && starts.get('produced') === 1);
      if (!(produce.code === 0 && ran)) fail([test.clause, 'VER-3', 'LAYOUT-2'], `a valid queue record must be accepted by produce and consume: ${test.description}`, evidence);
    } else {
      if (!(produce.code !== 0 && (starts.get('victim') ?? 0) === 0 && (starts.get('produced') ?? 0) === 0)) fail([test.clause, 'LAYOUT-2', 'VER-1', 'I7'], `a queue whose fsjob.json is invalid must be refused as a whole (produce fails, nothing runs): ${test.description}`, evidence);
      if (!after.equals(bytes)) fail(['LAYOUT-2', 'I7'], `the invalid fsjob.json must be left as it is: ${test.description}`, evidence);
    }
  });
  ctx.note(`${tests.length} of ${file.tests.length} queue vectors, and a directory without fsjob.json`);
}

type Kind = 'claim' | 'exec' | 'end' | 'receipt';

/** Invalid generation records planted in otherwise sane jobs: the job must not be acted on. */
function recordVectors(kind: Kind): (ctx: CaseContext) => Promise<void> {
  return async (ctx) => {
    const file = loadVectors(kind);
    const tests = selectVectors(file, ctx.settings.allVectors).filter((test) => !test.valid);
    const root = await ctx.newQueue('vectors');
    const work = await ctx.subdir('vectors/work');
    const queue = await reopen(root);
    const log = path.join(work, 'starts.log');
    const planted: { test: VectorCase; victim: Staged; name: string; bytes: Buffer; tag: string }[] = [];
    let index = 0;
    for (const test of tests) {
      index += 1;
      const tag = `v${index}`;
      const victim = await stageJob(queue, { argv: logged(log, tag), cwd: work });
      const first = test.file_name === undefined ? undefined : /jobs\/([0-9]{19}-[0-9a-f]{16})\//.exec(test.file_name)?.[1];
      const data = test.data as { job_id?: unknown } | undefined;
      const main = first ?? (typeof data?.job_id === 'string' ? data.job_id : undefined);
      const { bytes, fileName } = remapIds(vectorBytes(test), test.file_name, new Map(main === undefined ? [] : [[main, victim.id]]));
      const named = fileName === undefined ? undefined : recordNameOf(fileName);
      const gen = named?.expectations.expectedGen ?? 1;
      const name = kind === 'receipt' ? 'receipt.json' : `${kind}.${gen}.json`;
      const owner = await deadOwner();
      if (kind !== 'claim') await plantRecord(queue, victim.dir, `claim.${gen}.json`, 'claim', claimRecord(victim.id, gen, owner));
      if (kind === 'end' || kind === 'receipt') await plantRecord(queue, victim.dir, `exec.${gen}.json`, 'exec', execRecord(victim.id, gen, owner));
      if (kind === 'receipt') {
        await plantBytes(path.join(victim.dir, `stdout.${gen}`), '');
        await plantBytes(path.join(victim.dir, `stderr.${gen}`), '');
      }
      await plantBytes(path.join(victim.dir, name), bytes);
      planted.push({ test, victim, name, bytes, tag });
    }
    const runs: import('../runner/process.ts').ProcessResult[] = [];
    if (ctx.impl.roles.recover !== undefined) runs.push(await ctx.role('recover', { queue: root }));
    runs.push(await ctx.role('consume', { queue: root }));
    const snapshot = await ctx.snapshot(root);
    const starts = countBy(await readStarts(log));
    for (const run of runs) ctx.check(!run.timedOut && run.signal === null, ['I7', 'MANIFEST-2'], 'recover and consume must get through invalid records without hanging or crashing', [describeExit(run)]);
    for (const { test, victim, name, bytes, tag } of planted) {
      const job = snapshot.jobs.get(victim.id);
      const now = await readFile(path.join(victim.dir, name)).catch(() => undefined);
      const evidence = (): string[] => [label(test), ...runs.map(describeExit), ...listing(snapshot, new Set([victim.id]))];
      const clauses = [test.clause, 'REC-4', 'I7'];
      ctx.check((starts.get(tag) ?? 0) === 0, clauses, `the job ran although its ${name} is invalid: ${test.description}`, evidence);
      ctx.check(now !== undefined && now.equals(bytes), [...clauses, ...(kind === 'receipt' ? ['RCPT-6'] : [])], `the invalid ${name} was ${now === undefined ? 'removed' : 'changed'}; readers report it and leave it: ${test.description}`, evidence);
      if (kind === 'claim' || kind === 'exec') {
        const top = Math.max(...(job?.claims ?? [0]));
        const gen = Number(name.split('.')[1]);
        ctx.check(top <= gen && !job?.entries.some((e) => e.name === 'receipt.json'), [...clauses, kind === 'claim' ? 'CLAIM-3' : 'RECOV-1'], `${kind === 'claim' ? 'a claim that cannot be read has an unknown owner' : 'an execution that cannot be read is not proven stopped'}: the claim must not be broken, yet claims are ${job?.claims.join(',')}: ${test.description}`, evidence);
      }
    }
    ctx.note(`${planted.length} invalid ${kind} vectors of ${file.tests.length}`);
  };
}

/** A vector case checks its own clauses and every clause its vectors exercise. */
function withVectorClauses(type: string, clauses: string[]): string[] {
  return [...new Set([...clauses, ...loadVectors(type).tests.map((test) => test.clause)])];
}

export const vectorCases: ConformanceCase[] = [
  { name: 'vectors/spec', clauses: withVectorClauses('spec', ['REC-4', 'CLAIM-6', 'VER-1', 'I7']), level: 'consumer', strength: 'MUST', run: specVectors },
  { name: 'vectors/request', clauses: withVectorClauses('request', ['REQ-1', 'REQ-2', 'ENQ-1', 'VER-1', 'VER-3', 'I7']), level: 'producer', strength: 'MUST', fansOut: true, run: requestVectors },
  { name: 'vectors/queue', clauses: withVectorClauses('queue', ['LAYOUT-2', 'VER-1', 'VER-3', 'I7']), level: 'producer', strength: 'MUST', fansOut: true, run: queueVectors },
  { name: 'vectors/claim', clauses: withVectorClauses('claim', ['REC-4', 'CLAIM-3', 'I7']), level: 'consumer', strength: 'MUST', run: recordVectors('claim') },
  { name: 'vectors/exec', clauses: withVectorClauses('exec', ['REC-4', 'RECOV-1', 'I7']), level: 'consumer', strength: 'MUST', run: recordVectors('exec') },
  { name: 'vectors/end', clauses: withVectorClauses('end', ['REC-4', 'RETRY-2', 'I7']), level: 'consumer', strength: 'MUST', run: recordVectors('end') },
  { name: 'vectors/receipt', clauses: withVectorClauses('receipt', ['REC-4', 'RCPT-6', 'I7']), level: 'consumer', strength: 'MUST', run: recordVectors('receipt') },
];
