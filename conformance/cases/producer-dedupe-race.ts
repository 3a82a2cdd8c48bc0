/**
 * producer/dedupe-publish-and-exit (DEDUPE-3, DEDUPE-1): a rival producer
 * judges a dedupe hold whose producer publishes its job and exits between
 * the rival's looks. The rival saw `tmp/<id>/` (staged, so the hold counts
 * while its owner lives); by the time it asks about the owner's pid, the job
 * is in `jobs/` and the pid is dead. A judge that decides "not held" on the
 * dead pid alone takes the key for a second unfinished job. Seen with eight
 * racing producers of the reference (two jobs accepted for one key).
 *
 * The interleaving is forced, not hoped for: the rival runs under the crash
 * injector and stops at its read of `/proc/<owner pid>/stat` (ID-2: the only
 * way to learn a Linux process's start). While it is stopped the case does
 * what the holder's producer would: the ready entry, the publishing rename,
 * then the holder exits. An implementation that never reads that file (it
 * counts every staged hold as held, or judges in another order) is still
 * checked: it must refuse the job either way.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { PROTOCOL_VERSION } from '../../src/base/constants.ts';
import { createExclusive, ensurePrivateDir, fsyncDir, renameNoReplace } from '../../src/fs/safefs.ts';
import { processStart, selfIdentity, type Identity } from '../../src/model/identity.ts';
import { keyHash, readyEntryName } from '../../src/model/layout.ts';
import type { HoldRecord } from '../../src/records/codec.ts';
import type { CaseContext, ConformanceCase } from '../runner/case.ts';
import { entriesOf, listing } from '../runner/inspect.ts';
import { plantRecord, reopen, stageJob, writeRequest } from '../runner/stage.ts';
import { logged } from './jobs.ts';
import { needsInjector } from '../runner/pause.ts';

/** A live process of this host to stand for a holder (a producer, a consumer), and its identity (ID-1). */
export async function startHolder(): Promise<{ child: ChildProcess; owner: Identity; exited: Promise<void> }> {
  const child = spawn('sleep', ['600'], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const pid = child.pid;
  if (pid === undefined) throw new Error('dedupe-publish-and-exit: could not start sleep for the holder');
  // sleep's own start is the one to record: wait until the exec has happened.
  let start = await processStart(pid);
  for (let i = 0; i < 100 && (start === null || start.state === 'Z'); i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    start = await processStart(pid);
  }
  if (start === null) throw new Error(`dedupe-publish-and-exit: the holder (pid ${pid}) vanished before its identity could be read`);
  return { child, owner: { ...(await selfIdentity()), pid, start: start.start }, exited };
}

async function dedupePublishAndExitCase(ctx: CaseContext): Promise<void> {
  await needsInjector(ctx, 'to stop the rival producer at its look at the holder');
  const root = await ctx.newQueue('exit');
  const work = await ctx.subdir('exit/work');
  const log = path.join(work, 'starts.log');
  const queue = await reopen(root);
  const key = 'published then exited';
  const holder = await startHolder();
  try {
    // The holder's producer, between its hold (step 5) and its rename (step 7).
    const held = await stageJob(queue, { argv: logged(log, 'holder'), cwd: work, dedupe: key }, { dedupeHold: false, ready: false, publish: false });
    const holdDir = path.join(root, 'dedupe', keyHash(key));
    await ensurePrivateDir(holdDir, queue.fsOptions);
    await fsyncDir(path.dirname(holdDir), queue.fsOptions);
    const hold: HoldRecord = { fsjob: PROTOCOL_VERSION, type: 'hold', kind: 'dedupe', key, job_id: held.id, gen: null, owner: holder.owner, created_ms: Date.now() };
    await plantRecord(queue, holdDir, '1.json', 'hold', hold);

    const request = await writeRequest(path.join(ctx.dir, 'requests'), 'rival', { argv: logged(log, 'rival'), cwd: work, dedupe: key });
    const rival = await ctx.startRolePaused('produce', { queue: root, request }, { read: `/proc/${holder.owner.pid}/stat` });
    const looked = await rival.paused;
    if (looked !== undefined) {
      // The holder's producer finishes: ready entry (step 6), rename (step 7), exit.
      const entry = await createExclusive(path.join(root, 'ready'), readyEntryName(held.spec.priority, held.id), 0o600, queue.fsOptions);
      await entry.close();
      await renameNoReplace(held.dir, queue.paths.job(held.id), queue.fsOptions);
      holder.child.kill('SIGKILL');
      await holder.exited;
      rival.resume();
    }
    const result = await rival.result;
    const snapshot = await ctx.snapshot(root);
    const others = [...snapshot.jobs.keys()].filter((id) => id !== held.id);
    const holds = (await entriesOf(holdDir)).map((e) => e.name).filter((name) => /^[0-9]+\.json$/.test(name));
    const when = looked === undefined
      ? 'the rival never read the holder\'s /proc/<pid>/stat, so the case checked it against a live holder with a staged job'
      : 'the rival was stopped at its read of the holder\'s /proc/<pid>/stat; meanwhile the holder published its job and exited';
    ctx.check(
      result.exitCode === 3 && others.length === 0,
      ['DEDUPE-3', 'DEDUPE-1'],
      `${when}: the key's holder is a published, unfinished job, so the rival's enqueue must exit 3 (DEDUPE_HELD) and publish nothing; exit ${result.exitCode}${others.length === 0 ? '' : `, published ${others.join(' ')}`}, holds ${holds.join(' ') || 'none'}`,
      [`rival stderr: ${result.stderr.trim().split('\n').slice(-2).join(' | ').slice(0, 300)}`, ...listing(snapshot)],
    );
  } finally {
    if (holder.child.exitCode === null && holder.child.signalCode === null) holder.child.kill('SIGKILL');
  }
}

export const dedupeRaceCases: ConformanceCase[] = [
  { name: 'producer/dedupe-publish-and-exit', clauses: ['DEDUPE-3', 'DEDUPE-1'], level: 'producer', strength: 'MUST', features: ['dedupe'], run: dedupePublishAndExitCase },
];
