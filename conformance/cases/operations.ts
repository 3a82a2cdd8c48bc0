/**
 * What an operator relies on a consumer for (protocol 1.1): a delayed start
 * is not claimed before its instant (DELAY-1), a paused queue is not claimed
 * from (PAUSE-1), and a long output keeps the bytes its job asked for
 * (EXEC-17). Jobs are staged by the runner (the reference producer's
 * records), so only the consumer is under test. Each case checks the cause
 * first: the clause a broken consumer breaks is the first failure.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CONSUME_RETRY_WAIT } from '../../src/base/constants.ts';
import { pauseQueue } from '../../src/model/pause.ts';
import type { CaseContext, ConformanceCase } from '../runner/case.ts';
import { checkInvariants, listing } from '../runner/inspect.ts';
import { describeExit } from '../runner/process.ts';
import { reopen, stageJob } from '../runner/stage.ts';
import { sh } from './jobs.ts';

async function claimOf(queue: string, id: string, gen = 1): Promise<{ claimed_ms: number } | undefined> {
  try {
    return JSON.parse(await readFile(path.join(queue, 'jobs', id, `claim.${gen}.json`), 'utf8')) as { claimed_ms: number };
  } catch {
    return undefined;
  }
}

/**
 * DELAY-1: a job delayed well past CONSUME_RETRY_WAIT is not claimed (consume
 * exits 0 without waiting for it, MANIFEST-4); one delayed a few seconds is
 * waited for and claimed at or after its instant, by the consumer's clock
 * (the runner's: same host); a cancel still ends the far one at once.
 */
async function delayedStart(ctx: CaseContext): Promise<void> {
  const root = await ctx.newQueue('delayed');
  const queue = await reopen(root);
  const work = await ctx.subdir('delayed/work');
  const now = Date.now();
  const far = await stageJob(queue, { argv: sh('echo far'), cwd: work, not_before_ms: now + CONSUME_RETRY_WAIT + 3_600_000 });
  const near = await stageJob(queue, { argv: sh('echo near'), cwd: work, not_before_ms: now + 3_000 });
  const free = await stageJob(queue, { argv: sh('echo free'), cwd: work });
  const consumed = await ctx.role('consume', { queue: root });
  const snapshot = await ctx.snapshot(root);
  const evidence = [describeExit(consumed), ...listing(snapshot, new Set([far.id, near.id]))];
  const farClaim = await claimOf(root, far.id);
  ctx.check(farClaim === undefined, ['DELAY-1'], `a job whose not_before_ms lies an hour ahead was claimed (claim.1.json at ${farClaim?.claimed_ms}, not before ${far.spec.not_before_ms})`, evidence);
  const nearClaim = await claimOf(root, near.id);
  const notBefore = near.spec.not_before_ms ?? 0;
  if (nearClaim !== undefined) {
    ctx.check(nearClaim.claimed_ms >= notBefore, ['DELAY-1'], `a job delayed until ${notBefore} was claimed at ${nearClaim.claimed_ms}, ${notBefore - nearClaim.claimed_ms} ms early`, evidence);
  }
  ctx.check(consumed.code === 0, ['MANIFEST-4'], 'consume must exit 0 when only a far delayed job remains', evidence);
  ctx.check(snapshot.jobs.get(free.id)?.receipt?.outcome === 'succeeded', ['CLAIM-1'], 'the job without a delay must run', evidence);
  ctx.check(
    snapshot.jobs.get(near.id)?.receipt?.outcome === 'succeeded',
    ['DELAY-1', 'MANIFEST-4'],
    `a job delayed by 3 s (less than CONSUME_RETRY_WAIT, ${CONSUME_RETRY_WAIT} ms) must be waited for and run; receipt ${snapshot.jobs.get(near.id)?.receipt?.outcome ?? 'none'}`,
    evidence,
  );
  if (ctx.impl.roles.cancel !== undefined) {
    const cancelled = await ctx.role('cancel', { queue: root, id: far.id });
    const after = await ctx.snapshot(root);
    ctx.check(
      cancelled.code === 0 && after.jobs.get(far.id)?.receipt?.outcome === 'cancelled',
      ['DELAY-1', 'CANCEL-2'],
      `cancelling a delayed job ends it at once: exit ${cancelled.code}, receipt ${after.jobs.get(far.id)?.receipt?.outcome ?? 'none'}`,
      listing(after, new Set([far.id])),
    );
    for (const failure of await checkInvariants(after, { accepted: [far.id, near.id, free.id] })) ctx.failures.push(failure);
  }
}

/**
 * PAUSE-1: with a pause record in the root, and then with garbage at that
 * name (its existence decides, not its content), consume claims nothing and
 * exits 0; once the name is gone the jobs run.
 */
async function pausedQueue(ctx: CaseContext): Promise<void> {
  const root = await ctx.newQueue('paused');
  const queue = await reopen(root);
  const work = await ctx.subdir('paused/work');
  const ids = [(await stageJob(queue, { argv: sh('echo one'), cwd: work })).id, (await stageJob(queue, { argv: sh('echo two'), cwd: work })).id];
  const pauseFile = path.join(root, 'pause.json');
  await pauseQueue(queue, { reason: 'conformance: paused-queue' });
  const claimed = async (): Promise<string[]> => (await Promise.all(ids.map(async (id) => ((await claimOf(root, id)) === undefined ? [] : [id])))).flat();
  for (const what of ['a pause record', 'an invalid pause.json']) {
    if (what !== 'a pause record') {
      await rm(pauseFile, { force: true });
      await writeFile(pauseFile, 'not a record\n', { mode: 0o600, flag: 'wx' });
    }
    const paused = await ctx.role('consume', { queue: root });
    const taken = await claimed();
    const snapshot = await ctx.snapshot(root);
    if (!ctx.check(taken.length === 0, ['PAUSE-1'], `with ${what} in the queue root, consume claimed ${taken.join(', ')}`, [describeExit(paused), ...listing(snapshot)])) return;
    ctx.check(paused.code === 0, ['MANIFEST-4'], `consume on a paused queue must exit 0 (with ${what})`, [describeExit(paused)]);
  }
  await rm(pauseFile, { force: true });
  const resumed = await ctx.consumeOk(root, ['PAUSE-1']);
  const snapshot = await ctx.snapshot(root);
  const ran = ids.filter((id) => snapshot.jobs.get(id)?.receipt?.outcome === 'succeeded');
  ctx.check(ran.length === ids.length, ['PAUSE-1', 'CLAIM-1'], `once pause.json is gone the jobs run; ${ran.length} of ${ids.length} did`, [describeExit(resumed), ...listing(snapshot)]);
  for (const failure of await checkInvariants(snapshot, { accepted: ids })) ctx.failures.push(failure);
}

const LINES = 3000;
const BOUND = 1000;

/** The bytes `seq 1 N` prints. */
function seqBytes(n: number): Buffer {
  return Buffer.from(Array.from({ length: n }, (_, i) => `${i + 1}\n`).join(''));
}

/**
 * EXEC-17: three jobs print the same 13,893 bytes with a bound of 1000 and
 * keep the head, the tail, or both halves; a fourth prints less than the
 * bound in tail mode and keeps all of it, in order. The file and its receipt
 * summary must say exactly that.
 */
async function outputKeep(ctx: CaseContext): Promise<void> {
  const root = await ctx.newQueue('keep');
  const queue = await reopen(root);
  const work = await ctx.subdir('keep/work');
  const all = seqBytes(LINES);
  const short = seqBytes(10);
  const half = Math.floor(BOUND / 2);
  const plans = [
    { keep: 'head_tail' as const, lines: LINES, want: Buffer.concat([all.subarray(0, half), all.subarray(all.length - (BOUND - half))]) },
    { keep: 'tail' as const, lines: LINES, want: all.subarray(all.length - BOUND) },
    { keep: 'head' as const, lines: LINES, want: all.subarray(0, BOUND) },
    { keep: 'tail' as const, lines: 10, want: short },
  ];
  const staged = [];
  for (const plan of plans) {
    staged.push(await stageJob(queue, { argv: sh(`seq 1 ${plan.lines}`), cwd: work, max_output_bytes: BOUND, output_keep: plan.keep }));
  }
  const consumed = await ctx.consumeOk(root, ['EXEC-17']);
  const snapshot = await ctx.snapshot(root);
  for (const [index, plan] of plans.entries()) {
    const id = (staged[index] as { id: string }).id;
    const receipt = snapshot.jobs.get(id)?.receipt;
    const evidence = [describeExit(consumed), ...listing(snapshot, new Set([id]))];
    if (receipt === undefined || receipt.stdout === null) {
      ctx.fail(['EXEC-17', 'RCPT-5'], `the ${plan.keep} job (${plan.lines} lines) has no receipt with a stdout summary`, evidence);
      continue;
    }
    const kept = await readFile(path.join(root, 'jobs', id, `stdout.${receipt.stdout.gen}`)).catch(() => Buffer.alloc(0));
    const total = plan.lines === LINES ? all.length : short.length;
    const shown = (bytes: Buffer): string => JSON.stringify(bytes.toString('utf8').slice(0, 40)) + (bytes.length > 40 ? `...${JSON.stringify(bytes.toString('utf8').slice(-40))}` : '');
    ctx.check(kept.equals(plan.want), ['EXEC-17'], `output_keep ${plan.keep} of ${total} bytes with max_output_bytes ${BOUND} must keep ${plan.want.length} bytes ${shown(plan.want)}; stdout.${receipt.stdout.gen} holds ${kept.length}: ${shown(kept)}`, evidence);
    const summary = receipt.stdout;
    ctx.check(
      summary.bytes_total === total && summary.bytes_kept === kept.length && summary.truncated === total > BOUND,
      ['RCPT-5', 'EXEC-17'],
      `the receipt must say bytes_total ${total}, bytes_kept ${kept.length}, truncated ${total > BOUND}; it says ${summary.bytes_total}, ${summary.bytes_kept}, ${summary.truncated}`,
      evidence,
    );
  }
  for (const failure of await checkInvariants(snapshot, { accepted: staged.map((job) => job.id) })) ctx.failures.push(failure);
}

export const operationsCases: ConformanceCase[] = [
  { name: 'consumer/delayed-start', clauses: ['DELAY-1', 'MANIFEST-4'], level: 'consumer', strength: 'MUST', run: delayedStart },
  { name: 'consumer/paused-queue', clauses: ['PAUSE-1', 'MANIFEST-4'], level: 'consumer', strength: 'MUST', run: pausedQueue },
  { name: 'consumer/output-keep', clauses: ['EXEC-17', 'RCPT-5'], level: 'consumer', strength: 'MUST', run: outputKeep },
];
