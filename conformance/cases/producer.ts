/**
 * The cases of spec/producer.md: what init and produce leave on disk, read
 * back through the record layer, and dedupe keys.
 *
 * - producer/init, producer/spec-record, producer/cancel, producer/dedupe:
 *   the records, names and modes a producer writes;
 * - producer/spec-over-record-max (ENQ-7): a valid request whose spec would
 *   exceed RECORD_MAX is refused with nothing written;
 * - producer/dedupe-foreign-stage (DEDUPE-3): a foreign producer's hold of
 *   a job still in tmp/ counts for DEDUPE_STAGE_MAX + LEASE_SKEW, no longer;
 * - producer/dedupe-stage-bound (DEDUPE-5): a producer stopped at its ready
 *   entry (after its hold) for longer than DEDUPE_STAGE_MAX publishes
 *   nothing afterwards: the check is its last step before the rename.
 *
 * A producer that publishes and exits between a rival's looks is
 * producer-dedupe-race.ts's; a hold number reused under a taker is
 * hold-reuse.ts's. Moving directories is writing-moves.ts's.
 */
import { chmod, link, lstat, mkdir, readdir, readFile, rename, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { DEDUPE_STAGE_MAX, KILL_GRACE_DEFAULT, LEASE_SKEW, OUTPUT_DEFAULT, PROTOCOL_VERSION, RECORD_MAX, TIMEOUT_DEFAULT } from '../../src/base/constants.ts';
import { keyHash, readyEntryName } from '../../src/model/layout.ts';
import { type HoldRecord, type JobRequest, readRecord, serializeRecord, type SpecRecord } from '../../src/records/codec.ts';
import { selfIdentity, type Identity } from '../../src/model/identity.ts';
import { newJobId } from '../../src/producer/id.ts';
import { ensurePrivateDir } from '../../src/fs/safefs.ts';
import { JOB_ID_PATTERN } from '../../src/records/names.ts';
import type { CaseContext, ConformanceCase } from '../runner/case.ts';
import { hygieneFailures } from '../runner/hygiene.ts';
import { entriesOf, listing } from '../runner/inspect.ts';
import { describeExit, type ProcessResult } from '../runner/process.ts';
import { claimRecord, deadOwner, endRecord, execRecord, foreignOwner, ownerOf, receiptRecord, sleeper } from '../runner/fixtures.ts';
import { freshQueue, plantBytes, plantRecord, reopen, sha256Hex, stageJob, writeRequest } from '../runner/stage.ts';
import { needsInjector } from '../runner/pause.ts';
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
  const modes: string[] = [`./ ${await modeOf(root)}`, `fsjob.json ${await modeOf(path.join(root, 'fsjob.json'))}`];
  for (const dir of QUEUE_DIRS) modes.push(`${dir}/ ${await modeOf(path.join(root, dir))}`);
  const missing = QUEUE_DIRS.filter((dir, i) => !(modes[i + 2] ?? '').includes('dir'));
  ctx.check(missing.length === 0, ['LAYOUT-1', 'INIT-1'], `init creates ${QUEUE_DIRS.join(', ')}; missing or not directories: ${missing.join(', ')}`, modes);
  const record = await readRecord(path.join(root, 'fsjob.json'), 'queue', { root });
  ctx.check(record.ok, ['INIT-2', 'LAYOUT-2'], `fsjob.json must be a valid queue record: ${record.ok ? '' : record.findings[0]?.message}`, modes);
  for (const failure of await hygieneFailures(root, 'after init')) ctx.failures.push({ ...failure, evidence: modes });
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

  // INIT-1: an existing root is checked (SEC-1) before anything is created in it.
  const open = path.join(base, 'group-writable');
  await mkdir(open, { mode: 0o700 });
  await chmod(open, 0o770);
  const unsafe = await ctx.role('init', { queue: open });
  const inside = await readdir(open);
  ctx.check(unsafe.code !== 0 && inside.length === 0, ['INIT-1', 'SEC-1'], `init over an existing root writable by its group (0770) must fail and create nothing in it; it exited ${unsafe.code} and left: ${inside.join(' ') || 'nothing'}`, [describeExit(unsafe)]);
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

/**
 * The first clause a writer broke when a record it wrote is invalid: the
 * reader's finding names the rule; a version or unknown member is the
 * writer's VER-4, a malformed identity REC-8, another schema violation of a
 * spec its SPEC-2 (every field, of the right form).
 */
export function writerClause(finding: { clause: string; field?: string | undefined } | undefined, type: string): string {
  const clause = finding?.clause ?? 'REC-4';
  if (clause.startsWith('VER-')) return 'VER-4';
  if (clause === 'REC-5' && /^\/(producer|owner|by)(\/|$)/.test(finding?.field ?? '')) return 'REC-8';
  if (clause === 'REC-5' && type === 'spec') return 'SPEC-2';
  return clause;
}

/** Every dedupe hold of the queue naming `id`, as dedupe/<h>/<n>.json. */
async function holdsNaming(queue: string, id: string): Promise<string[]> {
  const found: string[] = [];
  for (const dir of await entriesOf(path.join(queue, 'dedupe'))) {
    if (dir.kind !== 'dir') continue;
    for (const hold of await entriesOf(path.join(queue, 'dedupe', dir.name))) {
      if (hold.kind !== 'file' || hold.name.startsWith('.')) continue;
      const text = await readFile(path.join(queue, 'dedupe', dir.name, hold.name), 'utf8').catch(() => '');
      if (text.includes(`"${id}"`)) found.push(`dedupe/${dir.name}/${hold.name}`);
    }
  }
  return found;
}

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
  const specOf = (jobId: string): SpecRecord | undefined => {
    const job = snapshot.jobs.get(jobId);
    if (job?.spec !== undefined) return job.spec;
    const present = job?.entries.some((e) => e.name === 'spec.json') === true;
    const finding = job?.specFindings[0];
    if (present) ctx.fail([writerClause(finding, 'spec'), 'SPEC-2', 'REC-4'], `jobs/${jobId}/spec.json must be a valid spec record: ${finding === undefined ? 'unreadable' : `${finding.code} (${finding.clause}): ${finding.message}`}`, evidence());
    else ctx.fail(['ENQ-3', 'SPEC-2'], `jobs/${jobId}/spec.json is missing`, evidence());
    return undefined;
  };
  for (const jobId of [id, minimalId]) {
    if (jobId === undefined) continue;
    const clockMs = Number(jobId.slice(0, 19)) / 1e6;
    ctx.check(clockMs >= before - 5000 && clockMs <= after + 5000, ['LAYOUT-4'], `a job id starts with 19 digits of the producer's clock in nanoseconds since the epoch; ${jobId} says ${new Date(clockMs).toISOString()}, produced between ${new Date(before).toISOString()} and ${new Date(after).toISOString()}`);
  }
  const staged = snapshot.tmp.filter((e) => !e.name.startsWith('.'));
  ctx.check(staged.length === 0, ['ENQ-3', 'ENQ-6'], `after a successful enqueue nothing is left in tmp/ (the staging directory is renamed into jobs/): ${staged.map((e) => e.name).join(' ')}`, evidence);
  if (id !== undefined) {
    const spec = specOf(id);
    if (spec === undefined) return;
    const want: Partial<SpecRecord> = {
      // VER-4: a 1.2 writer writes "1.2"; an implementation of 1.1 or 1.0 only may still write its own (VER-5, VER-6).
      fsjob: spec.fsjob === '1.0' || spec.fsjob === '1.1' ? spec.fsjob : '1.2',
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
    const inWindow = (ms: number): boolean => ms >= before - 5000 && ms <= after + 5000;
    if (!inWindow(spec.created_ms)) {
      const seconds = inWindow(spec.created_ms * 1000);
      ctx.fail(seconds ? ['REC-6', 'SPEC-2'] : ['SPEC-2', 'REC-6'], `created_ms ${spec.created_ms} is not the time of enqueue in milliseconds since the epoch (${before}..${after})${seconds ? ': it is in seconds' : ''}`);
    }
    ctx.check(spec.producer.uid === (process.geteuid?.() ?? 0), ['SPEC-2', 'ID-1'], `producer.uid is ${spec.producer.uid}, not the effective uid`);
    const stdin = await readFile(path.join(queue, 'jobs', id, 'stdin')).catch(() => undefined);
    ctx.check(stdin?.toString('utf8') === 'in\nput', ['ENQ-5', 'SPEC-2'], `the job's stdin file must hold the request's stdin_text; holds ${JSON.stringify(stdin?.toString('latin1'))}`, evidence);
    const entry = readyEntryName(7, id);
    const ready = snapshot.ready.find((e) => e.name === entry);
    const misnamed = snapshot.ready.filter((e) => e.name !== entry && e.name.includes(id));
    if (ready === undefined && misnamed.length > 0) ctx.fail(['LAYOUT-7', 'ENQ-2'], `the ready entry of a job of priority 7 is named ${entry}; found ${misnamed.map((e) => e.name).join(' ')}`, evidence());
    else ctx.check(ready !== undefined && ready.kind === 'file' && ready.size === 0, ['ENQ-2', 'READY-1', 'LAYOUT-7'], `a published job has the empty ready entry ready/${entry}`, evidence);
    const hashDir = keyHash('dedupe x');
    const holds = await holdsNaming(queue, id);
    const right = holds.filter((h) => h.startsWith(`dedupe/${hashDir}/`));
    if (right.length === 0 && holds.length > 0) ctx.fail(['LAYOUT-8', 'DEDUPE-2'], `a dedupe hold lives in dedupe/<sha256 of the key's UTF-8 bytes>/ (dedupe/${hashDir}/); found ${holds.join(' ')}`, evidence());
    else {
      const top = (await entriesOf(path.join(queue, 'dedupe', hashDir))).filter((e) => !e.name.startsWith('.')).map((e) => e.name).sort((a, b) => Number(a.split('.')[0]) - Number(b.split('.')[0])).at(-1);
      let heldBy: string | undefined;
      if (top !== undefined) {
        const hold = await readRecord(path.join(queue, 'dedupe', hashDir, top), 'hold', { expectedKind: 'dedupe', expectedKeyHash: hashDir });
        if (hold.ok) heldBy = hold.value.job_id;
      }
      ctx.check(heldBy === id, ['DEDUPE-2', 'LAYOUT-8'], `a job with a dedupe key takes a hold dedupe/<sha256(key)>/<n>.json naming it; the highest is ${top ?? 'none'} (held by ${heldBy ?? 'nobody'})`, evidence);
    }
  }
  if (minimalId !== undefined) {
    const spec = specOf(minimalId);
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
      ctx.check(wrong.length === 0 && path.isAbsolute(spec.cwd), ['SPEC-2'], `a producer writes every default of spec/spec-record.md: ${wrong.map(([key]) => `${key} is ${JSON.stringify((spec as unknown as Record<string, unknown>)[key])}`).join('; ') || `cwd ${spec.cwd} is not absolute`}`);
    }
    ctx.check(snapshot.ready.some((e) => e.name === readyEntryName(0, minimalId)), ['ENQ-2', 'LAYOUT-7'], `priority 0 gives the ready entry ${readyEntryName(0, minimalId)}`, evidence);
  }
  if (id !== undefined && minimalId !== undefined) {
    ctx.check(id < minimalId, ['LAYOUT-4'], `ids sort in enqueue order: ${id} was produced before ${minimalId}`);
  }
  for (const bad of snapshot.invalid) {
    const finding = bad.findings[0];
    const type = bad.path.endsWith('spec.json') ? 'spec' : 'other';
    ctx.fail([writerClause(finding, type), 'REC-4', 'VER-4'], `every record a producer writes is valid: ${bad.path}: ${finding === undefined ? 'invalid' : `${finding.code} (${finding.clause}): ${finding.message}`}`, evidence());
  }
  for (const failure of await hygieneFailures(queue, 'after two enqueues')) ctx.failures.push({ ...failure, evidence: evidence() });

  // REC-2: a request whose every member is within its bounds can still make a spec over RECORD_MAX (nine arguments of 128 KiB); it is refused, and nothing stays.
  const big = await ctx.newQueue('spec-too-large');
  // Written here, not by writeRequest: a request may exceed RECORD_MAX (REQUEST_MAX bounds it), a record may not.
  const bigRequest = path.join(work, 'too-large.json');
  await writeFile(bigRequest, `${JSON.stringify({ argv: ['/bin/echo', ...Array.from({ length: 9 }, (_, i) => String.fromCharCode(97 + i).repeat(131072))], cwd: work })}\n`, { mode: 0o600 });
  const refused = await ctx.role('produce', { queue: big, request: bigRequest });
  const left = await ctx.snapshot(big);
  const staying = [...left.jobs.keys(), ...left.tmp.filter((e) => !e.name.startsWith('.')).map((e) => `tmp/${e.name}`)];
  ctx.check(refused.code !== 0 && staying.length === 0, ['REC-2', 'ENQ-1', 'ENQ-6'], `a request whose spec record would be larger than RECORD_MAX (1 MiB) must be refused and leave nothing; produce exited ${refused.code}${staying.length > 0 ? `, left ${staying.join(' ')}` : ''}`, [describeExit(refused)]);
}

/** The hold numbers of a key, ascending, and the job the highest names. */
async function holdsOf(queue: string, key: string): Promise<{ numbers: number[]; topJob: string | undefined }> {
  const dir = path.join(queue, 'dedupe', keyHash(key));
  const numbers = (await entriesOf(dir))
    .filter((e) => e.kind === 'file' && /^[1-9][0-9]*\.json$/.test(e.name))
    .map((e) => Number(e.name.slice(0, -5)))
    .sort((a, b) => a - b);
  const top = numbers.at(-1);
  if (top === undefined) return { numbers, topJob: undefined };
  const hold = await readRecord(path.join(dir, `${top}.json`), 'hold', { expectedKind: 'dedupe', expectedKeyHash: keyHash(key) });
  return { numbers, topJob: hold.ok ? hold.value.job_id : undefined };
}

/**
 * Planted states of spec/producer.md, one key each: whether a hold is held
 * depends on its job (DEDUPE-3), never on luck. Each entry says whether a
 * new job with the key must be accepted.
 */
async function plantDedupeStates(ctx: CaseContext, root: string, work: string): Promise<{ key: string; what: string; accept: boolean; next?: number; stop?: () => Promise<void> }[]> {
  const queue = await reopen(root);
  const self = await selfIdentity();
  const hold = (key: string, jobId: string, owner: Identity): HoldRecord => ({ fsjob: '1.0', type: 'hold', kind: 'dedupe', key, job_id: jobId, gen: null, owner, created_ms: Date.now() });
  const plantHold = async (key: string, n: number, jobId: string, owner: Identity): Promise<void> => {
    const dir = path.join(root, 'dedupe', keyHash(key));
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await plantRecord(queue, dir, `${n}.json`, 'hold', hold(key, jobId, owner));
  };
  const states: { key: string; what: string; accept: boolean; next?: number; stop?: () => Promise<void> }[] = [];
  // Hold 5 of a finished job: the key is free, and the next hold is 6 (DEDUPE-2: n + 1).
  const finished = await stageJob(queue, { argv: ['/bin/true'], cwd: work, dedupe: 'k-finished' }, { dedupeHold: false });
  await plantHold('k-finished', 5, finished.id, self);
  await plantRecord(queue, finished.dir, 'claim.1.json', 'claim', claimRecord(finished.id, 1, self));
  await plantRecord(queue, finished.dir, 'exec.1.json', 'exec', execRecord(finished.id, 1, self));
  for (const stream of ['stdout.1', 'stderr.1']) await plantBytes(path.join(finished.dir, stream), '');
  await plantRecord(queue, finished.dir, 'receipt.json', 'receipt', receiptRecord(finished.id, 1, self));
  states.push({ key: 'k-finished', what: 'the hold (number 5) of a job with a receipt', accept: true, next: 6 });
  // A job whose claim is open and whose command runs (a live owner): unfinished.
  const live = await sleeper();
  const running = await stageJob(queue, { argv: ['/bin/true'], cwd: work, dedupe: 'k-running' });
  const liveOwner = await ownerOf(live.pid, live.start);
  await plantRecord(queue, running.dir, 'claim.1.json', 'claim', claimRecord(running.id, 1, liveOwner));
  await plantRecord(queue, running.dir, 'exec.1.json', 'exec', execRecord(running.id, 1, liveOwner));
  states.push({ key: 'k-running', what: 'the hold of a job that is claimed and running', accept: false, stop: live.stop });
  // A job waiting for its retry (an end record, no receipt): unfinished.
  const retrying = await stageJob(queue, { argv: ['/bin/true'], cwd: work, dedupe: 'k-retrying', max_attempts: 3 });
  const dead = await deadOwner();
  await plantRecord(queue, retrying.dir, 'claim.1.json', 'claim', claimRecord(retrying.id, 1, dead));
  await plantRecord(queue, retrying.dir, 'exec.1.json', 'exec', execRecord(retrying.id, 1, dead));
  await plantRecord(queue, retrying.dir, 'end.1.json', 'end', { ...endRecord(retrying.id, 1), retry_at_ms: Date.now() + 3_600_000 });
  states.push({ key: 'k-retrying', what: 'the hold of a job waiting to be retried', accept: false });
  // Still being staged (tmp/<id>/ exists) by a live producer, or by a dead one.
  const stagingLive = newJobId();
  await mkdir(path.join(root, 'tmp', stagingLive), { mode: 0o700 });
  await plantHold('k-staging-live', 1, stagingLive, liveOwner);
  states.push({ key: 'k-staging-live', what: 'the hold of a job a live producer is still staging in tmp/', accept: false });
  const stagingDead = newJobId();
  await mkdir(path.join(root, 'tmp', stagingDead), { mode: 0o700 });
  await plantHold('k-staging-dead', 1, stagingDead, dead);
  states.push({ key: 'k-staging-dead', what: 'the hold of a job a dead producer left in tmp/', accept: true, next: 2 });
  // Neither published nor staged: the producer gave up (ENQ-6) or crashed before the rename.
  await plantHold('k-gone', 1, newJobId(), self);
  states.push({ key: 'k-gone', what: 'the hold of a job that is neither in jobs/ nor in tmp/', accept: true, next: 2 });
  return states;
}

async function dedupeCase(ctx: CaseContext): Promise<void> {
  const queue = await ctx.newQueue('dedupe');
  const work = await ctx.subdir('dedupe/work');
  const log = path.join(work, 'starts.log');
  const request = (tag: string, key: string): JobRequest => ({ argv: logged(log, tag), cwd: work, dedupe: key });
  const first = await ctx.produceOk(queue, request('first', 'key-1'), ['DEDUPE-2']);
  if (first === undefined) return;
  const readyBefore = (await ctx.snapshot(queue)).ready.length;
  const second = await ctx.produce(queue, request('second', 'key-1'));
  const afterRefusal = await ctx.snapshot(queue);
  ctx.check(second.result.code === 3, ['DEDUPE-1', 'MANIFEST-1'], `a second job with a held dedupe key must be refused with exit status 3`, [describeExit(second.result), `stdout: ${JSON.stringify(second.result.stdout.slice(0, 100))}`]);
  ctx.check(afterRefusal.jobs.size === 1, ['DEDUPE-1', 'ENQ-6'], `a refused job leaves no job directory: jobs/ holds ${afterRefusal.jobs.size}`, listing(afterRefusal));
  const leftStaged = afterRefusal.tmp.filter((e) => !e.name.startsWith('.'));
  ctx.check(leftStaged.length === 0 && afterRefusal.ready.length === readyBefore, ['ENQ-6', 'DEDUPE-1'], `a refused enqueue removes what it staged (tmp/<id>/ and its ready entry): tmp/ holds ${leftStaged.map((e) => e.name).join(' ') || 'nothing'}, ready/ ${afterRefusal.ready.length} entries (${readyBefore} before)`, listing(afterRefusal));

  // The planted states get a queue of their own: it is never consumed (one job waits an hour for its retry).
  const planted = await ctx.newQueue('dedupe-states');
  const states = await plantDedupeStates(ctx, planted, work);
  try {
    for (const state of states) {
      const before = await holdsOf(planted, state.key);
      const produced = await ctx.produce(planted, { argv: ['/bin/true'], cwd: work, dedupe: state.key });
      const after = await holdsOf(planted, state.key);
      const evidence = [describeExit(produced.result), `holds of ${JSON.stringify(state.key)} before: ${before.numbers.join(',') || 'none'}, after: ${after.numbers.join(',') || 'none'} (the highest names ${after.topJob ?? 'nobody'})`];
      if (state.accept) {
        if (!ctx.check(produced.id !== undefined, ['DEDUPE-3', 'DEDUPE-1'], `a key whose highest hold is ${state.what} is free: the job must be accepted`, evidence)) continue;
        ctx.check(after.topJob === produced.id && after.numbers.at(-1) === state.next, ['DEDUPE-2', 'LAYOUT-8'], `taking a key whose highest hold is number ${before.numbers.at(-1)} publishes hold ${state.next} naming the new job`, evidence);
      } else {
        ctx.check(produced.result.code === 3, ['DEDUPE-3', 'DEDUPE-1'], `a key whose highest hold is ${state.what} is held: the job must be refused with exit status 3`, evidence);
      }
    }
  } finally {
    for (const state of states) await state.stop?.();
  }

  const otherKey = await ctx.produceOk(queue, request('other-key', 'key-2'), ['DEDUPE-1']);
  await ctx.consumeOk(queue, ['DEDUPE-3']);
  const kept = await holdsOf(queue, 'key-1');
  ctx.check(kept.topJob === first, ['DEDUPE-4', 'LANE-3'], `the highest dedupe hold is never removed, also once its job finished: dedupe/${keyHash('key-1')}/ holds ${kept.numbers.join(',') || 'nothing'}`, listing(await ctx.snapshot(queue)));
  const released = await ctx.produce(queue, request('released', 'key-1'));
  ctx.check(released.id !== undefined, ['DEDUPE-3', 'DEDUPE-1'], 'once the job holding a key is finished, the key is free again', [describeExit(released.result), ...listing(await ctx.snapshot(queue))]);
  await ctx.consumeOk(queue, ['DEDUPE-3']);
  const end = await ctx.snapshot(queue);
  for (const id of [first, otherKey, released.id]) {
    if (id === undefined) continue;
    ctx.check(end.jobs.get(id)?.receipt?.outcome === 'succeeded', ['RCPT-3', 'DEDUPE-1', 'I3'], `job ${id} must have finished`, listing(end, new Set([id])));
  }
}

/**
 * CANCEL-1, the producer's side of cancellation: a request is a record
 * published by link (cancel.json, or cancel-force.json with force true); a
 * second request of the same kind stands and succeeds without replacing
 * the first; a finished job, or one that does not exist, cannot be
 * cancelled and gets nothing. The job whose requests stand is claimed by a
 * live owner, so no canceller may finish it at once (CANCEL-2).
 */
async function cancelCase(ctx: CaseContext): Promise<void> {
  const root = await ctx.newQueue('cancel');
  const work = await ctx.subdir('cancel/work');
  const queue = await reopen(root);
  const self = await selfIdentity();
  const owner = await sleeper();
  try {
    const owned = await stageJob(queue, { argv: ['/bin/true'], cwd: work });
    await plantRecord(queue, owned.dir, 'claim.1.json', 'claim', claimRecord(owned.id, 1, await ownerOf(owner.pid, owner.start)));
    const finished = await stageJob(queue, { argv: ['/bin/true'], cwd: work });
    await plantRecord(queue, finished.dir, 'claim.1.json', 'claim', claimRecord(finished.id, 1, self));
    await plantRecord(queue, finished.dir, 'exec.1.json', 'exec', execRecord(finished.id, 1, self));
    for (const stream of ['stdout.1', 'stderr.1']) await plantBytes(path.join(finished.dir, stream), '');
    await plantRecord(queue, finished.dir, 'receipt.json', 'receipt', receiptRecord(finished.id, 1, self));
    const missing = newJobId();
    const evidence = async (): Promise<string[]> => listing(await ctx.snapshot(root));

    const cancel = async (role: 'cancel' | 'cancel_force', id: string): Promise<ProcessResult> => ctx.role(role, { queue: root, id });
    const first = await cancel('cancel', owned.id);
    const published = await readFile(path.join(owned.dir, 'cancel.json')).catch(() => undefined);
    const record = await readRecord(path.join(owned.dir, 'cancel.json'), 'cancel', { expectedJobId: owned.id, expectedForce: false, allowMissing: true });
    ctx.check(first.code === 0 && record?.ok === true, ['CANCEL-1', 'PUB-3'], `cancel of a claimed job exits 0 and publishes a valid cancel.json (force false)${record === undefined ? ': there is none' : record.ok ? '' : `: ${record.findings[0]?.message}`}`, [describeExit(first), ...(await evidence())]);
    const again = await cancel('cancel', owned.id);
    const after = await readFile(path.join(owned.dir, 'cancel.json')).catch(() => undefined);
    ctx.check(again.code === 0, ['CANCEL-1'], 'a second cancel of the same job succeeds: the existing request stands', [describeExit(again)]);
    ctx.check(published !== undefined && after !== undefined && published.equals(after), ['CANCEL-1', 'PUB-3'], 'a second cancel leaves the existing cancel.json as it is (write-once: the link fails, the request stands)', await evidence());
    if (ctx.impl.roles.cancel_force !== undefined) {
      const force = await cancel('cancel_force', owned.id);
      const forced = await readRecord(path.join(owned.dir, 'cancel-force.json'), 'cancel', { expectedJobId: owned.id, expectedForce: true, allowMissing: true });
      ctx.check(force.code === 0 && forced?.ok === true, ['CANCEL-1', 'PUB-3'], `a forced cancel publishes a valid cancel-force.json (force true)${forced === undefined ? ': there is none' : forced.ok ? '' : `: ${forced.findings[0]?.message}`}`, [describeExit(force), ...(await evidence())]);
    }
    const late = await cancel('cancel', finished.id);
    const lateNames = (await entriesOf(finished.dir)).map((e) => e.name).filter((name) => name.startsWith('cancel'));
    ctx.check(late.code !== 0 && lateNames.length === 0, ['CANCEL-1', 'RCPT-6'], `a job with a receipt cannot be cancelled: cancel must fail and publish nothing; it exited ${late.code} and the job holds ${lateNames.join(' ') || 'no cancel record'}`, [describeExit(late)]);
    const nobody = await cancel('cancel', missing);
    const created = (await entriesOf(path.join(root, 'jobs'))).some((e) => e.name === missing);
    ctx.check(nobody.code !== 0 && !created, ['CANCEL-1', 'ENQ-5'], `cancel of a job that does not exist must fail and create nothing; it exited ${nobody.code}${created ? ` and created jobs/${missing}` : ''}`, [describeExit(nobody)]);
    for (const failure of await hygieneFailures(root, 'after the cancels')) ctx.failures.push({ ...failure, evidence: await evidence() });
  } finally {
    await owner.stop();
  }
}

/** Scheduling tolerance on a loaded 2-core machine, added to every bound the spec states. */
const TOLERANCE_MS = 3000;

/**
 * producer/payload-as-written (REQ-2): a payload's numbers are copied into
 * the spec as written, whatever value the producer's language makes of them:
 * 1e400 (no double holds it), 23 significant digits, 1.50, -0 and 1E+2 stay
 * so, and so does the member order (an integer-like name last). Refusing
 * them, or writing another text of their value, fails.
 */
async function payloadAsWrittenCase(ctx: CaseContext): Promise<void> {
  const f = await freshQueue(ctx, 'payload');
  const payload = '{"big":1e400,"long":12345678901234567890123,"kept":1.50,"neg":-0,"exp":1E+2,"list":[0.1,2e-7],"2":"last"}';
  // Written by hand: a JavaScript value cannot hold these numbers (MANIFEST-2's compact form still holds).
  const request = path.join(await ctx.subdir('payload/requests'), 'numbers.json');
  await writeFile(request, `{"handler":"numbers.v1","payload":${payload},"cwd":${JSON.stringify(f.work)}}\n`, { mode: 0o600 });
  const produced = await ctx.role('produce', { queue: f.root, request });
  const id = produced.stdout.trim();
  const evidence = [describeExit(produced), `payload in the request: ${payload}`];
  if (!ctx.check(produced.code === 0 && JOB_ID_PATTERN.test(id), ['REQ-2', 'ENQ-1'], `a request whose payload numbers are valid JSON (1e400, 23 significant digits, 1.50, -0, 1E+2) must be accepted; ${describeExit(produced)}`, evidence)) return;
  const spec = await readFile(path.join(f.root, 'jobs', id, 'spec.json'), 'utf8').catch(() => '');
  ctx.check(
    spec.includes(`"payload":${payload}`),
    ['REQ-2', 'SPEC-1'],
    `the spec must carry the payload as the request wrote it, number for number and member for member; spec.json has ${/"payload":.*?\},"cwd"/.exec(spec)?.[0] ?? spec.slice(0, 300)}`,
    [...evidence, `spec.json: ${spec.slice(0, 600)}`],
  );
}

async function specOverRecordMaxCase(ctx: CaseContext): Promise<void> {
  const f = await freshQueue(ctx, 'recordmax');
  // Every argument within its own bound (131072 bytes), the spec past RECORD_MAX.
  const big = 'x'.repeat(131_072);
  const argv: [string, ...string[]] = ['true', ...Array.from({ length: Math.ceil(RECORD_MAX / big.length) + 1 }, () => big)];
  const produced = await ctx.produce(f.root, { argv, cwd: f.work });
  const jobs = (await entriesOf(path.join(f.root, 'jobs'))).map((e) => e.name);
  const tmp = (await entriesOf(path.join(f.root, 'tmp'))).filter((e) => !e.name.startsWith('.')).map((e) => e.name);
  const ready = (await entriesOf(path.join(f.root, 'ready'))).map((e) => e.name);
  ctx.check(
    produced.id === undefined && produced.result.code !== 0 && jobs.length === 0 && tmp.length === 0 && ready.length === 0,
    ['ENQ-7', 'REC-2', 'ENQ-1'],
    `a request whose spec would be larger than RECORD_MAX (${RECORD_MAX}) must be refused before anything is written; ${describeExit(produced.result)}; jobs/ ${jobs.join(' ') || '-'}, tmp/ ${tmp.join(' ') || '-'}, ready/ ${ready.join(' ') || '-'}`,
  );
}

async function dedupeForeignStageCase(ctx: CaseContext): Promise<void> {
  const f = await freshQueue(ctx, 'stage');
  const foreign = foreignOwner(await selfIdentity());
  const plantStaged = async (key: string, ageMs: number): Promise<string> => {
    const id = newJobId();
    await ensurePrivateDir(f.queue.paths.staging(id), f.queue.fsOptions);
    const dir = path.join(f.root, 'dedupe', keyHash(key));
    await ensurePrivateDir(dir, f.queue.fsOptions);
    const hold: HoldRecord = { fsjob: PROTOCOL_VERSION, type: 'hold', kind: 'dedupe', key, job_id: id, gen: null, owner: foreign, created_ms: Date.now() - ageMs };
    await plantRecord(f.queue, dir, '1.json', 'hold', hold);
    return id;
  };
  // Inside DEDUPE_STAGE_MAX + LEASE_SKEW (65 s) but past a 30 s lease + GUARDIAN_LIMIT + LEASE_SKEW: held.
  const young = await plantStaged('young key', 50_000);
  // Past DEDUPE_STAGE_MAX + LEASE_SKEW (+ tolerance): no longer held, although tmp/<id>/ is still there.
  const old = await plantStaged('old key', DEDUPE_STAGE_MAX + LEASE_SKEW + TOLERANCE_MS + 5_000);
  const a = await ctx.produce(f.root, { argv: logged(f.log, 'a'), cwd: f.work, dedupe: 'young key' });
  const b = await ctx.produce(f.root, { argv: logged(f.log, 'b'), cwd: f.work, dedupe: 'old key' });
  ctx.check(a.result.code === 3, ['DEDUPE-3', 'DEDUPE-1'], `a foreign producer's hold of a job still staged (tmp/${young}/) taken 50 s ago counts until DEDUPE_STAGE_MAX + LEASE_SKEW: the enqueue must exit 3; ${describeExit(a.result)}`);
  ctx.check(b.result.code === 0 && b.id !== undefined, ['DEDUPE-3', 'DEDUPE-2'], `a foreign producer's hold of a job staged (tmp/${old}/) more than DEDUPE_STAGE_MAX + LEASE_SKEW ago no longer counts: the enqueue is accepted; ${describeExit(b.result)}`);
}

/**
 * DEDUPE-5 needs DEDUPE_STAGE_MAX to pass between the producer's clock
 * reading for its hold and its publishing rename. Nothing outside the
 * producer can move its monotonic clock, so the case stops it (SIGSTOP, the
 * interposer's pause point) just before it links the hold, after it read the
 * clock for the hold's created_ms, and waits the spec's number out: one
 * minute of sleep, no CPU; the case starts first (heavy).
 */
const STOPPED_MS = DEDUPE_STAGE_MAX + 1000;

async function dedupeStageBoundCase(ctx: CaseContext): Promise<void> {
  await needsInjector(ctx, 'to stop the producer at its dedupe hold');
  const f = await freshQueue(ctx, 'bound');
  const request = await writeRequest(path.join(ctx.dir, 'requests'), 'late', { argv: logged(f.log, 'late'), cwd: f.work, dedupe: 'late key' });
  // The role's own time limit runs while it is stopped: extend it by the stop.
  // Stopped at its ready entry (ENQ-2), after the hold: DEDUPE-5's check comes later, just before the rename.
  const run = await ctx.startRolePaused('produce', { queue: f.root, request }, { op: 'open', path: 'ready/*' }, { timeoutMs: ctx.impl.timeoutMs + STOPPED_MS });
  const call = await run.paused;
  if (call === undefined) {
    const result = await run.result;
    ctx.fail(['ENQ-2'], `produce of a request with a dedupe key ended without creating its ready entry (exit ${result.exitCode}); the case could not stop it there`, listing(await ctx.snapshot(f.root)));
    return;
  }
  const staged = (await readdir(path.join(f.root, 'tmp'))).filter((name) => JOB_ID_PATTERN.test(name));
  await new Promise((resolve) => setTimeout(resolve, STOPPED_MS));
  run.resume();
  const result = await run.result;
  const snapshot = await ctx.snapshot(f.root);
  const published = [...snapshot.jobs.keys()];
  const evidence = [`produce: ${result.timedOut ? 'killed after its time limit; ' : ''}exit ${result.exitCode}${result.signal === null ? '' : ` signal ${result.signal}`}; stderr: ${result.stderr.trim().split('\n').slice(-2).join(' | ').slice(0, 300)}`, ...listing(snapshot)];
  if (!ctx.check(published.length === 0 && result.exitCode !== 0 && result.exitCode !== null, ['DEDUPE-5', 'DEDUPE-3'], `a producer stopped ${STOPPED_MS / 1000} s at the creation of its ready entry (${call.path}), after taking its dedupe hold, is past DEDUPE_STAGE_MAX when it resumes: its last step before the rename is DEDUPE-5's check, so it must refuse the job and publish nothing; published ${published.length === 0 ? 'nothing' : published.join(' ')}, exit ${result.exitCode}`, evidence)) return;
  const left = snapshot.tmp.map((e) => e.name).filter((name) => staged.includes(name));
  const ready = snapshot.ready.map((e) => e.name).filter((name) => staged.some((id) => name.endsWith(id)));
  ctx.check(left.length === 0 && ready.length === 0, ['ENQ-6', 'DEDUPE-5'], `the refused job's staging and ready entry must be removed (ENQ-6); left: ${[...left.map((n) => `tmp/${n}`), ...ready.map((n) => `ready/${n}`)].join(' ')}`, evidence);
}

export const producerCases: ConformanceCase[] = [
  { name: 'producer/init', clauses: ['INIT-1', 'INIT-2', 'LAYOUT-1', 'LAYOUT-2', 'PUB-8', 'SEC-1', 'SEC-5', 'PUB-1', 'PUB-3', 'PUB-6', 'VER-1'], level: 'producer', strength: 'MUST', roles: ['init'], run: initCase },
  {
    name: 'producer/spec-record',
    clauses: ['ENQ-1', 'ENQ-2', 'ENQ-3', 'ENQ-4', 'ENQ-5', 'ENQ-6', 'SPEC-1', 'SPEC-2', 'REC-1', 'REC-2', 'REC-3', 'REC-6', 'REC-7', 'REC-8', 'VER-4', 'LAYOUT-4', 'LAYOUT-7', 'LAYOUT-8', 'DEDUPE-2', 'SEC-5', 'PUB-1', 'PUB-3', 'PUB-6', 'PUB-7', 'PUB-8'],
    level: 'producer',
    strength: 'MUST',
    run: specCase,
  },
  { name: 'producer/cancel', clauses: ['CANCEL-1', 'PUB-3', 'PUB-6', 'RCPT-6'], level: 'producer', strength: 'MUST', roles: ['cancel'], run: cancelCase },
  { name: 'producer/dedupe', clauses: ['DEDUPE-1', 'DEDUPE-2', 'DEDUPE-3', 'DEDUPE-4', 'ENQ-6', 'LAYOUT-8'], level: 'producer', strength: 'MUST', features: ['dedupe'], run: dedupeCase },
  { name: 'producer/payload-as-written', clauses: ['REQ-2', 'ENQ-1', 'SPEC-1'], level: 'producer', strength: 'MUST', run: payloadAsWrittenCase },
  { name: 'producer/spec-over-record-max', clauses: ['ENQ-7', 'REC-2', 'ENQ-1'], level: 'producer', strength: 'MUST', run: specOverRecordMaxCase },
  { name: 'producer/dedupe-foreign-stage', clauses: ['DEDUPE-3', 'DEDUPE-1', 'DEDUPE-2'], level: 'producer', strength: 'MUST', features: ['dedupe'], run: dedupeForeignStageCase },
  { name: 'producer/dedupe-stage-bound', clauses: ['DEDUPE-5', 'DEDUPE-3', 'DEDUPE-2', 'ENQ-6'], level: 'producer', strength: 'MUST', features: ['dedupe'], heavy: true, run: dedupeStageBoundCase },
];
