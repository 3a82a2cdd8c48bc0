/**
 * Malformed records, fuzzed (issue 6, I7, I8): truncated, wrong types, huge
 * strings, deep nesting, invalid UTF-8, NUL bytes, duplicate keys, BOMs,
 * trailing garbage, hostile ids, random bytes. Each is made from a valid
 * record that the real producer and consumer wrote, and stored under that
 * record's real name in a real queue (spec.json, claim.<g>.json,
 * state.<g>.json, exec/end records, receipt.json, cancel.json, a hold,
 * workers/<w>.json, fsjob.json).
 *
 * Every reader answers with data: the record layer with findings (never an
 * exception), `fsjob validate` with a finding at that path, `fsjob status`
 * with a documented exit status and no stack trace, and the consumer
 * claiming the job with a `rejected` receipt for a broken spec, never an
 * exception escaping its run, never a hang.
 *
 * Runs per property are fixed and printed: FUZZ_RECORD_RUNS per record name
 * for the record layer, FUZZ_QUEUE_RUNS whole-queue runs; FSJOB_BATTERY_LONG=1
 * multiplies both by ten. FSJOB_FUZZ_SEED replays a seed.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { isFsjobError } from '../../src/base/errors.ts';
import { FINDING_CODES, type Finding } from '../../src/records/findings.ts';
import type { JobRequest } from '../../src/producer/index.ts';
import { inspectRecord, recordNameOf, type RecordType } from '../../src/records/codec.ts';
import { openQueue, initQueue } from '../../src/model/queue.ts';
import { enqueue, jobStatus, listJobs, normalizeRequest, parseRequest } from '../../src/producer/index.ts';
import { Worker } from '../../src/consumer/index.ts';
import { auditQueue } from '../../src/validator/queue.ts';
import { cleanupAll, freshDir, withWatchdog } from '../support/helpers.ts';
import { claim, deadIdentity, cancel as requestCancel, registerWorker, state } from '../support/validate-queue.ts';
import { COMMAND_WATCHDOG_MS, copyTree, crashed, DOCUMENTED_STATUSES, jobOf, runFsjob, walk } from '../support/walker.ts';
import { receiptOf, hasReceipt } from '../support/consumer.ts';

const LONG = process.env['FSJOB_BATTERY_LONG'] === '1';
const FUZZ_RECORD_RUNS = LONG ? 2000 : 200;
const FUZZ_QUEUE_RUNS = LONG ? 400 : 15;
const SEED = process.env['FSJOB_FUZZ_SEED'] === undefined ? 20261130 : Number(process.env['FSJOB_FUZZ_SEED']);

interface Target {
  /** Path relative to the queue root. */
  rel: string;
  type: RecordType;
  valid: Buffer;
}

let template = '';
let targets: Target[] = [];
let queuedId = '';

async function buildTemplate(): Promise<void> {
  const dir = await freshDir('fsjob-fuzz');
  template = join(dir, 'template');
  const queue = await initQueue(template);
  const cwd = tmpdir();
  const add = async (request: JobRequest): Promise<string> => (await enqueue(queue, request, { cwd })).id;
  await add({ handler: 'echo', payload: { n: 1 }, lane: 'fuzz-lane' });
  const worker = new Worker({ queues: [queue], mode: 'drain', commands: false, pollMs: 50 });
  worker.handle('echo', (ctx) => ctx.payload);
  await worker.run();
  const orphan = await add({ handler: 'echo', payload: null });
  await claim(queue, orphan, 1, { owner: await deadIdentity() });
  await state(queue, orphan, 1);
  const cancelled = await add({ handler: 'echo', payload: 'c' });
  await requestCancel(queue, cancelled);
  queuedId = await add({ handler: 'echo', payload: { deep: [1, 'two', null] }, dedupe: 'fuzz-key', labels: { team: 'fuzz' } });
  await registerWorker(queue, '0123456789abcdef');
  targets = walk(template)
    .paths.map((rel) => ({ rel, name: recordNameOf(rel) }))
    .filter((entry) => entry.name !== undefined)
    .map(({ rel, name }) => ({ rel, type: (name as { type: RecordType }).type, valid: readFileSync(join(template, rel)) }));
}

// ---------------------------------------------------------------- mutations

type Mutation =
  | { kind: 'truncate'; at: number }
  | { kind: 'wrong-type'; member: number; value: unknown }
  | { kind: 'huge-string'; member: number; length: number }
  | { kind: 'deep'; member: number; depth: number; object: boolean }
  | { kind: 'bad-utf8'; at: number; bytes: readonly number[] }
  | { kind: 'nul'; at: number; escaped: boolean }
  | { kind: 'duplicate-key'; member: number }
  | { kind: 'bom' }
  | { kind: 'trailing'; bytes: Uint8Array }
  | { kind: 'hostile-id'; value: string }
  | { kind: 'random'; bytes: Uint8Array };

const HOSTILE_IDS = ['..', '../../../etc', 'a/b', '/tmp/x', 'x\u0000y', '.hidden', '', '1796024326147000000-7513e5170c5b082', `${'9'.repeat(19)}-${'f'.repeat(16)}`];
const ID_MEMBERS = ['id', 'job_id', 'worker_id', 'key'];

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('wrong-type' as const), member: fc.nat(), value: fc.jsonValue({ maxDepth: 3 }) }),
  fc.record({ kind: fc.constant('huge-string' as const), member: fc.nat(), length: fc.oneof(fc.integer({ min: 1000, max: 70_000 }), fc.constantFrom(1_048_576, 1_100_000)) }),
  fc.record({ kind: fc.constant('deep' as const), member: fc.nat(), depth: fc.oneof(fc.integer({ min: 120, max: 140 }), fc.integer({ min: 1000, max: 300_000 })), object: fc.boolean() }),
  fc.record({ kind: fc.constant('bad-utf8' as const), at: fc.nat(), bytes: fc.constantFrom([0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xe2, 0x82], [0x80]) }),
  fc.record({ kind: fc.constant('nul' as const), at: fc.nat(), escaped: fc.boolean() }),
  fc.record({ kind: fc.constant('duplicate-key' as const), member: fc.nat() }),
  fc.constant({ kind: 'bom' as const }),
  fc.record({ kind: fc.constant('trailing' as const), bytes: fc.uint8Array({ minLength: 1, maxLength: 40 }) }),
  fc.record({ kind: fc.constant('hostile-id' as const), value: fc.constantFrom(...HOSTILE_IDS) }),
  fc.record({ kind: fc.constant('random' as const), bytes: fc.uint8Array({ maxLength: 200 }) }),
);

const nested = (depth: number, object: boolean): string => (object ? `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}` : `${'['.repeat(depth)}${']'.repeat(depth)}`);

/** The valid record with one member replaced by raw JSON text (member picked modulo the member count). */
function replaceMember(valid: Buffer, member: number, raw: string): Buffer {
  const object = JSON.parse(valid.toString('utf8')) as Record<string, unknown>;
  const keys = Object.keys(object);
  const key = keys[member % keys.length] as string;
  const marker = '\u0001MARK\u0001';
  object[key] = marker;
  return Buffer.from(`${JSON.stringify(object).replace(JSON.stringify(marker), raw)}\n`);
}

function insert(valid: Buffer, at: number, bytes: Buffer): Buffer {
  const index = at % (valid.length + 1);
  return Buffer.concat([valid.subarray(0, index), bytes, valid.subarray(index)]);
}

export function applyMutation(valid: Buffer, m: Mutation): Buffer {
  switch (m.kind) {
    case 'truncate':
      return valid.subarray(0, m.at % valid.length);
    case 'wrong-type':
      return replaceMember(valid, m.member, JSON.stringify(m.value));
    case 'huge-string':
      return replaceMember(valid, m.member, JSON.stringify('é'.repeat(Math.floor(m.length / 2))));
    case 'deep':
      return replaceMember(valid, m.member, nested(m.depth, m.object));
    case 'bad-utf8':
      return insert(valid, m.at, Buffer.from(m.bytes));
    case 'nul': {
      if (!m.escaped) return insert(valid, m.at, Buffer.from([0]));
      return replaceMember(valid, m.at, JSON.stringify('before\u0000after'));
    }
    case 'duplicate-key': {
      const object = JSON.parse(valid.toString('utf8')) as Record<string, unknown>;
      const keys = Object.keys(object);
      const key = keys[m.member % keys.length] as string;
      const text = valid.toString('utf8').trimEnd();
      return Buffer.from(`${text.slice(0, -1)},${JSON.stringify(key)}:${JSON.stringify(object[key])}}\n`);
    }
    case 'bom':
      return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), valid]);
    case 'trailing':
      return Buffer.concat([valid, Buffer.from(m.bytes)]);
    case 'hostile-id': {
      const object = JSON.parse(valid.toString('utf8')) as Record<string, unknown>;
      const key = ID_MEMBERS.find((name) => Object.hasOwn(object, name)) ?? 'type';
      object[key] = m.value;
      return Buffer.from(`${JSON.stringify(object)}\n`);
    }
    case 'random':
      return Buffer.from(m.bytes);
  }
}

// ---------------------------------------------------------------- checks

function checkFindings(findings: readonly Finding[]): void {
  for (const finding of findings) {
    assert.ok(Object.hasOwn(FINDING_CODES, finding.code), `a registered finding code: ${finding.code}`);
    assert.type(finding.clause, 'string');
  }
}

const target = (): fc.Arbitrary<Target> => fc.constantFrom(...targets);

const fuzz = suite('malformed records, fuzzed');
fuzz.before(buildTemplate);
fuzz.after(cleanupAll);

fuzz('the template holds a record of every type under its real name', () => {
  const types = new Set(targets.map((entry) => entry.type));
  for (const type of ['queue', 'spec', 'claim', 'exec', 'state', 'cancel', 'receipt', 'worker', 'hold'] as const) assert.ok(types.has(type), type);
});

fuzz('the record layer answers every malformed record with findings, never an exception', () => {
  for (const entry of targets) {
    const expectations = recordNameOf(entry.rel)?.expectations ?? {};
    fc.assert(
      fc.property(mutation, (m) => {
        const bytes = applyMutation(entry.valid, m);
        const inspection = inspectRecord(entry.type, bytes, { ...expectations, path: entry.rel });
        checkFindings(inspection.findings);
        if (!inspection.ok) assert.ok(inspection.findings.some((finding) => finding.severity === 'error'), 'a rejection names an error');
      }),
      { numRuns: FUZZ_RECORD_RUNS, seed: SEED },
    );
  }
  console.log(`fuzz: record layer: ${FUZZ_RECORD_RUNS} cases x ${targets.length} record names = ${FUZZ_RECORD_RUNS * targets.length} (seed ${SEED})`);
});

/** Calls `read`; an FsjobError of one of `codes` is an answer, anything else escaping is a failure. */
function answers(read: () => unknown, codes: readonly string[]): void {
  try {
    read();
  } catch (error) {
    if (!isFsjobError(error) || !codes.includes(error.code)) throw error;
  }
}

fuzz('requests (fsjob enqueue --request, --batch, the producer library) are accepted or refused with USAGE, never an exception', () => {
  const valid = Buffer.from(`${JSON.stringify({ fsjob: '1.0', argv: ['make', 'test'], lane: 'l', dedupe: 'd', stdin_text: 'x', labels: { a: 'b' } })}\n`);
  fc.assert(
    fc.property(mutation, (m) => answers(() => normalizeRequest(parseRequest(applyMutation(valid, m)), { cwd: '/' }), ['USAGE', 'UNSUPPORTED_VERSION'])),
    { numRuns: FUZZ_RECORD_RUNS, seed: SEED },
  );
  fc.assert(
    fc.property(fc.oneof(fc.anything(), fc.jsonValue(), fc.record({ fsjob: fc.constant('1.0'), argv: fc.anything() })), (value) =>
      answers(() => normalizeRequest(value, { cwd: '/' }), ['USAGE', 'UNSUPPORTED_VERSION']),
    ),
    { numRuns: FUZZ_RECORD_RUNS, seed: SEED },
  );
  console.log(`fuzz: requests: ${FUZZ_RECORD_RUNS} byte cases + ${FUZZ_RECORD_RUNS} value cases (seed ${SEED})`);
});

let runIndex = 0;
fuzz('validate, status and the consumer answer a malformed record in a real queue with a finding or a rejected receipt', async () => {
  const base = join(template, '..', 'runs');
  mkdirSync(base, { mode: 0o700 });
  await fc.assert(
    fc.asyncProperty(target(), mutation, async (entry, m) => {
      const root = join(base, String((runIndex += 1)));
      copyTree(template, root);
      try {
        const bytes = applyMutation(entry.valid, m);
        const file = join(root, entry.rel);
        rmSync(file);
        writeFileSync(file, bytes, { mode: 0o600 });
        const expectations = recordNameOf(entry.rel)?.expectations ?? {};
        const inspection = inspectRecord(entry.type, bytes, expectations);

        // fsjob validate: a finding at the path for anything the record layer rejects.
        const audit = await withWatchdog(COMMAND_WATCHDOG_MS, auditQueue(root));
        checkFindings(audit.findings);
        if (!inspection.ok) {
          const here = audit.findings.filter((finding) => finding.path === file && finding.severity === 'error');
          const codes = audit.findings.map((finding) => `${finding.code} ${finding.path}`);
          assert.ok(here.length > 0 || entry.type === 'queue', `validate reports ${entry.rel}: ${codes.slice(0, 6).join(', ')}`);
        }

        // fsjob status and fsjob validate through the CLI: documented statuses, no stack trace.
        for (const args of [['status', '--queue', root], ['validate', root], ...(jobOf(entry.rel) === undefined ? [] : [['status', '--queue', root, jobOf(entry.rel) as string]])]) {
          const run = await runFsjob(args, root);
          assert.ok(DOCUMENTED_STATUSES.has(run.status) && !crashed(run), `fsjob ${args.join(' ')}: ${run.status} ${run.stderr.slice(0, 400)}`);
        }
        if (entry.type === 'queue' && !inspection.ok) return; // no queue to read any further (LAYOUT-2)

        // The producer's readers: findings or FsjobErrors, nothing else.
        const queue = await openQueue(root);
        await listJobs(queue, { limit: 0 });
        const id = jobOf(entry.rel);
        if (id !== undefined) {
          await jobStatus(queue, id).catch((error: unknown) => {
            if (!isFsjobError(error)) throw error;
          });
        }

        // The consumer: a payload worker drains the queue; its run never throws, never hangs.
        const worker = new Worker({ queues: [queue], mode: 'drain', commands: false, pollMs: 50 });
        worker.handle('echo', (ctx) => ctx.payload);
        await withWatchdog(COMMAND_WATCHDOG_MS, worker.run(), () => worker.stop());
        if (entry.type === 'spec' && id === queuedId && !inspection.ok) {
          assert.ok(hasReceipt(queue, id), 'the job with the broken spec is finished');
          assert.is(receiptOf(queue, id).outcome, 'rejected');
        }
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    }),
    { numRuns: FUZZ_QUEUE_RUNS, seed: SEED },
  );
  console.log(`fuzz: whole queue: ${FUZZ_QUEUE_RUNS} cases over ${targets.length} record names (seed ${SEED})`);
});

fuzz.run();
