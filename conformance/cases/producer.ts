/**
 * Producer cases: what init and produce leave on disk (section 6), read back
 * through the record layer, and dedupe keys (section 9.4).
 */
import { lstat, readFile, writeFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { KILL_GRACE_DEFAULT, OUTPUT_DEFAULT, TIMEOUT_DEFAULT } from '../../src/base/constants.ts';
import { keyHash, readyEntryName } from '../../src/model/layout.ts';
import { readRecord, serializeRecord, type JobRequest, type SpecRecord } from '../../src/records/codec.ts';
import type { CaseContext, ConformanceCase } from '../runner/case.ts';
import { entriesOf, listing } from '../runner/inspect.ts';
import { describeExit } from '../runner/process.ts';
import { sha256Hex } from '../runner/stage.ts';
import { logged } from './jobs.ts';

const QUEUE_DIRS = ['tmp', 'jobs', 'ready', 'dedupe', 'lanes', 'workers'];

async function modeOf(file: string): Promise<string> {
  try {
    const st = await lstat(file);
    return `${st.isSymbolicLink() ? 'symlink' : st.isDirectory() ? 'dir' : st.isFile() ? 'file' : 'other'} ${(st.mode & 0o777).toString(8).padStart(4, '0')}`;
  } catch {
    return 'missing';
  }
}

async function initCase(ctx: CaseContext): Promise<void> {
  const base = await ctx.subdir('init');
  const root = path.join(base, 'q');
  const first = await ctx.role('init', { queue: root });
  if (!ctx.check(first.code === 0, ['INIT-1', 'INIT-2'], 'init of a new directory must succeed', [describeExit(first)])) return;
  const record = await readRecord(path.join(root, 'fsjob.json'), 'queue', { root });
  ctx.check(record.ok, ['INIT-2', 'LAYOUT-2'], `fsjob.json must be a valid queue record: ${record.ok ? '' : record.findings[0]?.message}`);
  const modes: string[] = [`./ ${await modeOf(root)}`, `fsjob.json ${await modeOf(path.join(root, 'fsjob.json'))}`];
  for (const dir of QUEUE_DIRS) modes.push(`${dir}/ ${await modeOf(path.join(root, dir))}`);
  const wrong = modes.filter((line) => !(line.endsWith('dir 0700') || line === 'fsjob.json file 0600'));
  ctx.check(wrong.length === 0, ['INIT-1', 'LAYOUT-1', 'PUB-8', 'SEC-5'], `a queue is the root, fsjob.json (0600) and ${QUEUE_DIRS.join(', ')} (0700); wrong: ${wrong.join('; ')}`, modes);
  const before = await readFile(path.join(root, 'fsjob.json')).catch(() => Buffer.alloc(0));
  const again = await ctx.role('init', { queue: root });
  const after = await readFile(path.join(root, 'fsjob.json')).catch(() => Buffer.alloc(0));
  ctx.check(again.code === 0 && before.equals(after), ['INIT-2'], 'init is idempotent: a second init succeeds and leaves fsjob.json unchanged', [describeExit(again)]);

  // An invalid queue record makes init fail, and init does not repair it by replacing it.
  const other = path.join(base, 'bad');
  await mkdir(other, { mode: 0o700 });
  for (const dir of QUEUE_DIRS) await mkdir(path.join(other, dir), { mode: 0o700 });
  const bad = serializeRecord({ fsjob: '2.0', type: 'queue', queue_id: '0123456789abcdef', created_ms: 1 });
  await writeFile(path.join(other, 'fsjob.json'), bad, { mode: 0o600 });
  const refused = await ctx.role('init', { queue: other });
  const kept = await readFile(path.join(other, 'fsjob.json')).catch(() => Buffer.alloc(0));
  ctx.check(refused.code !== 0 && kept.equals(bad), ['INIT-2', 'VER-1'], 'init over a queue record of major 2 must fail and leave it alone', [describeExit(refused), `fsjob.json now: ${kept.toString('utf8').trim()}`]);
}

const FULL: Omit<JobRequest, 'cwd'> = {
  argv: ['/bin/echo', 'a b', 'ünïcode'],
  env: { CASE: 'x y', LANG: 'C.UTF-8' },
  stdin_text: 'in\nput',
  timeout_ms: 12345,
  kill_grace_ms: 678,
  queue_deadline_ms: 900000,
  max_attempts: 4,
  retry_delay_ms: 50,
  priority: 7,
  lane: 'lane x',
  dedupe: 'dedupe x',
  preemptible: false,
  max_output_bytes: 4096,
  labels: { team: 'qa', 'a.b/c': 'v' },
};

async function specCase(ctx: CaseContext): Promise<void> {
  const queue = await ctx.newQueue('spec', { init: ctx.impl });
  const work = await ctx.subdir('spec/work');
  const full: JobRequest = { ...FULL, cwd: work };
  const before = Date.now();
  const id = await ctx.produceOk(queue, full, ['ENQ-4', 'MANIFEST-1']);
  const minimalId = await ctx.produceOk(queue, { argv: ['/bin/true'] }, ['ENQ-4', 'MANIFEST-1']);
  const after = Date.now();
  const snapshot = await ctx.snapshot(queue);
  const evidence = (): string[] => listing(snapshot);
  if (id !== undefined) {
    const job = snapshot.jobs.get(id);
    const spec = job?.spec;
    if (spec === undefined) {
      ctx.fail(['ENQ-3', 'SPEC-2', 'REC-4'], `jobs/${id}/spec.json must be a valid spec record: ${job?.specFindings[0]?.message ?? 'missing'}`, evidence());
      return;
    }
    const want: Partial<SpecRecord> = {
      // VER-4: a 1.1 writer writes "1.1"; a 1.0 implementation may still write "1.0" (VER-5).
      fsjob: spec.fsjob === '1.0' ? '1.0' : '1.1',
      type: 'spec',
      id,
      argv: FULL.argv,
      cwd: work,
      env: FULL.env,
      stdin: { bytes: 6, sha256: sha256Hex('in\nput') },
      timeout_ms: 12345,
      kill_grace_ms: 678,
      queue_deadline_ms: 900000,
      max_attempts: 4,
      retry_delay_ms: 50,
      priority: 7,
      lane: 'lane x',
      dedupe: 'dedupe x',
      preemptible: false,
      max_output_bytes: 4096,
      labels: FULL.labels,
    };
    const wrong = Object.entries(want).filter(([key, value]) => !isDeepStrictEqual((spec as unknown as Record<string, unknown>)[key], value));
    ctx.check(wrong.length === 0, ['SPEC-2', 'ENQ-1'], `the spec must carry the request: ${wrong.map(([key, value]) => `${key} is ${JSON.stringify((spec as unknown as Record<string, unknown>)[key])}, requested ${JSON.stringify(value)}`).join('; ')}`, evidence);
    ctx.check(spec.created_ms >= before - 5000 && spec.created_ms <= after + 5000, ['SPEC-2', 'REC-6'], `created_ms ${spec.created_ms} is not the time of enqueue (${before}..${after})`);
    ctx.check(spec.producer.uid === (process.geteuid?.() ?? 0), ['SPEC-2', 'ID-1'], `producer.uid is ${spec.producer.uid}, not the effective uid`);
    const stdin = await readFile(path.join(queue, 'jobs', id, 'stdin')).catch(() => undefined);
    ctx.check(stdin?.toString('utf8') === 'in\nput', ['ENQ-5', 'SPEC-2'], `the job's stdin file must hold the request's stdin_text; holds ${JSON.stringify(stdin?.toString('latin1'))}`, evidence);
    const modes = [`jobs/${id}/ ${await modeOf(path.join(queue, 'jobs', id))}`, `spec.json ${await modeOf(path.join(queue, 'jobs', id, 'spec.json'))}`, `stdin ${await modeOf(path.join(queue, 'jobs', id, 'stdin'))}`];
    ctx.check(modes[0]?.endsWith('dir 0700') === true && modes[1]?.endsWith('file 0600') === true && modes[2]?.endsWith('file 0600') === true, ['SEC-5', 'PUB-7', 'PUB-8'], `job directories are 0700 and files 0600: ${modes.join(', ')}`);
    const entry = readyEntryName(7, id);
    const ready = snapshot.ready.find((e) => e.name === entry);
    ctx.check(ready !== undefined && ready.kind === 'file' && ready.size === 0, ['ENQ-2', 'READY-1', 'LAYOUT-7'], `a published job has the empty ready entry ready/${entry}`, evidence);
    const holds = await entriesOf(path.join(queue, 'dedupe', keyHash('dedupe x')));
    const holdNames = holds.filter((e) => !e.name.startsWith('.')).map((e) => e.name);
    let heldBy: string | undefined;
    const top = holdNames.sort((a, b) => Number(a.split('.')[0]) - Number(b.split('.')[0])).at(-1);
    if (top !== undefined) {
      const hold = await readRecord(path.join(queue, 'dedupe', keyHash('dedupe x'), top), 'hold', { expectedKind: 'dedupe', expectedKeyHash: keyHash('dedupe x') });
      if (hold.ok) heldBy = hold.value.job_id;
    }
    ctx.check(heldBy === id, ['DEDUPE-2', 'LAYOUT-8'], `a job with a dedupe key takes a hold dedupe/<sha256(key)>/<n>.json naming it; found ${holdNames.join(' ') || 'none'} (held by ${heldBy ?? 'nobody'})`);
  }
  if (minimalId !== undefined) {
    const spec = snapshot.jobs.get(minimalId)?.spec;
    if (spec !== undefined) {
      const defaults: Partial<SpecRecord> = {
        env: {},
        stdin: null,
        timeout_ms: TIMEOUT_DEFAULT,
        kill_grace_ms: KILL_GRACE_DEFAULT,
        queue_deadline_ms: null,
        max_attempts: 1,
        retry_delay_ms: 0,
        priority: 0,
        lane: null,
        dedupe: null,
        preemptible: false,
        max_output_bytes: OUTPUT_DEFAULT,
        labels: {},
      };
      const wrong = Object.entries(defaults).filter(([key, value]) => !isDeepStrictEqual((spec as unknown as Record<string, unknown>)[key], value));
      ctx.check(wrong.length === 0 && path.isAbsolute(spec.cwd), ['SPEC-2'], `a producer writes every default of section 5.2: ${wrong.map(([key]) => `${key} is ${JSON.stringify((spec as unknown as Record<string, unknown>)[key])}`).join('; ') || `cwd ${spec.cwd} is not absolute`}`);
    } else {
      ctx.fail(['ENQ-3', 'SPEC-2'], `jobs/${minimalId}/spec.json must be a valid spec record`, evidence());
    }
    ctx.check(snapshot.ready.some((e) => e.name === readyEntryName(0, minimalId)), ['ENQ-2', 'LAYOUT-7'], `priority 0 gives the ready entry ${readyEntryName(0, minimalId)}`, evidence);
  }
  if (id !== undefined && minimalId !== undefined) {
    ctx.check(id < minimalId, ['LAYOUT-4'], `ids sort in enqueue order: ${id} was produced before ${minimalId}`);
  }
  const staged = snapshot.tmp.filter((e) => !e.name.startsWith('.'));
  ctx.check(staged.length === 0, ['ENQ-3', 'ENQ-6'], `after a successful enqueue nothing is left in tmp/: ${staged.map((e) => e.name).join(' ')}`, evidence);
  ctx.check(snapshot.invalid.length === 0, ['REC-4', 'VER-4'], `every record a producer writes is valid: ${snapshot.invalid.map((i) => `${i.path}: ${i.findings[0]?.message}`).join('; ')}`, evidence);
}

async function dedupeCase(ctx: CaseContext): Promise<void> {
  const queue = await ctx.newQueue('dedupe');
  const work = await ctx.subdir('dedupe/work');
  const log = path.join(work, 'starts.log');
  const request = (tag: string, key: string): JobRequest => ({ argv: logged(log, tag), cwd: work, dedupe: key });
  const first = await ctx.produceOk(queue, request('first', 'key-1'), ['DEDUPE-2']);
  if (first === undefined) return;
  const second = await ctx.produce(queue, request('second', 'key-1'));
  const afterRefusal = await ctx.snapshot(queue);
  ctx.check(second.result.code === 3, ['DEDUPE-1', 'MANIFEST-1'], `a second job with a held dedupe key must be refused with exit status 3`, [describeExit(second.result), `stdout: ${JSON.stringify(second.result.stdout.slice(0, 100))}`]);
  ctx.check(afterRefusal.jobs.size === 1, ['DEDUPE-1', 'ENQ-6'], `a refused job leaves no job directory: jobs/ holds ${afterRefusal.jobs.size}`, listing(afterRefusal));
  const otherKey = await ctx.produceOk(queue, request('other-key', 'key-2'), ['DEDUPE-1']);
  await ctx.consumeOk(queue, ['DEDUPE-3']);
  const released = await ctx.produce(queue, request('released', 'key-1'));
  ctx.check(released.id !== undefined, ['DEDUPE-3', 'DEDUPE-1'], 'once the job holding a key is finished, the key is free again', [describeExit(released.result), ...listing(await ctx.snapshot(queue))]);
  await ctx.consumeOk(queue, ['DEDUPE-3']);
  const end = await ctx.snapshot(queue);
  for (const id of [first, otherKey, released.id]) {
    if (id === undefined) continue;
    ctx.check(end.jobs.get(id)?.receipt?.outcome === 'succeeded', ['I3', 'DEDUPE-1'], `job ${id} must have finished`, listing(end, new Set([id])));
  }
}

export const producerCases: ConformanceCase[] = [
  { name: 'producer/init', clauses: ['INIT-1', 'INIT-2', 'LAYOUT-1', 'PUB-8', 'SEC-5'], level: 'producer', strength: 'MUST', roles: ['init'], run: initCase },
  {
    name: 'producer/spec-record',
    clauses: ['ENQ-1', 'ENQ-2', 'ENQ-3', 'ENQ-4', 'SPEC-2', 'LAYOUT-4', 'LAYOUT-7', 'DEDUPE-2', 'SEC-5'],
    level: 'producer',
    strength: 'MUST',
    run: specCase,
  },
  { name: 'producer/dedupe', clauses: ['DEDUPE-1', 'DEDUPE-2', 'DEDUPE-3'], level: 'producer', strength: 'MUST', run: dedupeCase },
];
