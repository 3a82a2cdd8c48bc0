/**
 * Moving a whole directory (PUB-9), at the producer level.
 *
 * audit/moves: one produce of a valid request runs under the injector in
 * trace mode, and every directory it renamed is audited (runner/audit-moves.ts):
 * only tmp/<id> -> jobs/<id>, and jobs/ fsynced after it by the run. The
 * consumer level's roles (consume, cancel, recover) get the same audit in
 * audit/publication, whose runs are traced too.
 *
 * producer/publish-no-replace: the mover "MUST first check that the target
 * name does not exist (rename() replaces an empty directory)". For the
 * publishing rename the target, jobs/<id>, is predictable from the moment
 * the id is chosen, so the case plants it: the producer is stopped at its
 * first call in ready/ (the ready entry, ENQ-2, step 6), an empty
 * directory is made at jobs/<id>, and the producer resumes. Its step 7 check
 * comes after step 6, so it must see the planted name and refuse (or pick a
 * new id), never rename over it; a refusal removes what it staged (ENQ-6).
 * The race the spec accepts (ENQ-3) is between step 7's check and its
 * rename, which this never lands in.
 *
 * The other move, GC-1's retirement to tmp/.gc-<id>-<random>, cannot be
 * planted: its name ends in a random part chosen at the rename, so nothing
 * can be made there before the mover's check; and no manifest role collects
 * garbage (MANIFEST-1). The reference's gc goes through renameNoReplace,
 * whose refusal of an existing (even empty) directory test/fs/safefs.test.ts
 * checks, and test/conformance/audit-moves.test.ts audits a real `fsjob gc`
 * run's move and fsyncs.
 */
import { lstat, mkdir, chmod, readdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { JOB_ID_PATTERN } from '../../src/records/names.ts';
import { isJobId } from '../../src/model/layout.ts';
import { runWithCrash } from '../crash/run.ts';
import { auditMoves } from '../runner/audit-moves.ts';
import type { CaseContext, ConformanceCase } from '../runner/case.ts';
import { entriesOf, listing } from '../runner/inspect.ts';
import { roleArgv } from '../runner/manifest.ts';
import { roleEnv } from '../runner/process.ts';
import { writeRequest } from '../runner/stage.ts';
import { describeInjectedRun, needsInjector } from '../runner/pause.ts';

async function auditMovesCase(ctx: CaseContext): Promise<void> {
  await needsInjector(ctx, 'to trace the producer\'s renames');
  const root = await realpath(await ctx.newQueue('moves'));
  const work = await ctx.subdir('moves/work');
  const request = await writeRequest(work, 'job', { argv: ['/bin/true'], cwd: work, stdin_text: 'staged with its stdin\n' });
  const result = await runWithCrash({ argv: roleArgv(ctx.impl, 'produce', { queue: root, request }), cwd: ctx.impl.dir, env: roleEnv(ctx.impl, { [ctx.marker.name]: ctx.marker.value }), root, trace: true, timeoutMs: ctx.impl.timeoutMs });
  const trace = result.trace ?? [];
  const id = result.stdout.trim();
  if (result.exitCode !== 0 || !JOB_ID_PATTERN.test(id)) {
    ctx.fail(['ENQ-4', 'MANIFEST-1'], 'produce did not accept a valid request under the injector (it must exit 0 and print the id)', [describeInjectedRun(result)]);
    return;
  }
  if (trace.length === 0) {
    ctx.fail(['MANIFEST-1'], 'the injector saw no mutating call inside the queue; the implementation bypasses LD_PRELOAD and its moves cannot be audited', []);
    return;
  }
  ctx.failures.push(...auditMoves(trace, root, 'produce'));
  // A job that reached jobs/ some other way (made there, linked) is ENQ-3's; a wrong source is reported above.
  const published = trace.some((r) => r.family === 'rename' && r.ret === 0 && r.path2 === path.join(root, 'jobs', id));
  ctx.check(published, ['ENQ-3', 'PUB-9'], `produce accepted ${id} without a successful rename of tmp/${id} to jobs/${id}; a job is published by that one rename`, () => trace.filter((r) => r.family === 'rename' || r.family === 'mkdir').map((r) => `k=${r.k} ${r.op} ${path.relative(root, r.path)}${r.path2 === undefined ? '' : ` -> ${path.relative(root, r.path2)}`} ret ${r.ret}`));
  ctx.note(`${trace.length} traced calls, ${trace.filter((r) => r.family === 'rename').length} renames`);
}

/** The job id in a ready entry's name (`<P>-<id>`), else the one job-id-named entry of tmp/. */
async function stagedId(root: string, paths: string[]): Promise<string | undefined> {
  for (const p of paths) {
    const match = /([0-9]{19}-[0-9a-f]{16})$/.exec(path.basename(p));
    if (match !== null) return match[1];
  }
  const staged = (await entriesOf(path.join(root, 'tmp'))).map((e) => e.name).filter(isJobId);
  return staged.length === 1 ? staged[0] : undefined;
}

async function publishNoReplaceCase(ctx: CaseContext): Promise<void> {
  await needsInjector(ctx, 'to stop the producer between its ready entry and its publishing rename');
  const root = await realpath(await ctx.newQueue('planted'));
  const work = await ctx.subdir('planted/work');
  const request = await writeRequest(work, 'job', { argv: ['/bin/true'], cwd: work });
  const run = await ctx.startRolePaused('produce', { queue: root, request }, { path: 'ready/*' });
  const call = await run.paused;
  const id = call === undefined ? undefined : await stagedId(root, [call.path2 ?? '', call.path]);
  if (call === undefined || id === undefined) {
    run.resume();
    const result = await run.result;
    ctx.fail(['ENQ-2', 'PUB-9'], call === undefined ? 'produce made no call in ready/ before it ended: it creates no ready entry before publishing (step 6), so the case found no moment to plant jobs/<id>' : `produce was stopped at its first call in ready/ (${path.relative(root, call.path)}), but neither that name nor tmp/ tells its job id`, [describeInjectedRun(result), ...listing(await ctx.snapshot(root))]);
    return;
  }
  const planted = path.join(root, 'jobs', id);
  await mkdir(planted, { mode: 0o700 });
  await chmod(planted, 0o700);
  const before = await lstat(planted);
  run.resume();
  const result = await run.result;
  const after = await lstat(planted).catch(() => undefined);
  const inside = after?.isDirectory() === true ? await readdir(planted) : [];
  const printed = result.stdout.trim();
  const evidence: string[] = [describeInjectedRun(result), `jobs/${id}: ${after === undefined ? 'gone' : `${after.isDirectory() ? 'directory' : 'not a directory'}, inode ${after.ino} (planted ${before.ino}), entries: ${inside.join(' ') || 'none'}`}`, ...listing(await ctx.snapshot(root))];
  const kept = after !== undefined && after.isDirectory() && after.ino === before.ino && inside.length === 0;
  const stopped = 'produce was stopped at its ready entry (step 6), an empty directory was planted at jobs/<id>, and it was resumed';
  if (!ctx.check(kept, ['PUB-9', 'ENQ-3'], `${stopped}: the planted jobs/${id} was ${after === undefined ? 'removed' : 'replaced'}; rename() replaces an empty directory, so the mover checks first that the target does not exist, and refuses`, evidence)) return;
  if (!ctx.check(!(result.exitCode === 0 && printed === id), ['PUB-9', 'ENQ-3'], `${stopped}: produce reported ${id} as accepted although jobs/${id} is the planted empty directory, not its job`, evidence)) return;
  if (result.exitCode === 0) {
    // A producer may pick a new id instead of failing: then that job must be published whole.
    const other = JOB_ID_PATTERN.test(printed) ? await lstat(path.join(root, 'jobs', printed, 'spec.json')).catch(() => undefined) : undefined;
    ctx.note(`the planted jobs/${id} was kept; produce published the job as ${printed} instead`);
    ctx.check(other !== undefined, ['ENQ-3', 'ENQ-4'], `${stopped}: produce exited 0 but printed ${JSON.stringify(printed.slice(0, 80))}, which is not a published job`, evidence);
    return;
  }
  ctx.note(`the planted jobs/${id} was kept; produce refused the job (exit ${result.exitCode})`);
  const leftStaged = await lstat(path.join(root, 'tmp', id)).then(() => true, () => false);
  const leftReady = (await entriesOf(path.join(root, 'ready'))).map((e) => e.name).filter((name) => name.endsWith(`-${id}`));
  ctx.check(!leftStaged && leftReady.length === 0, ['ENQ-6'], `${stopped}: produce refused the job, but left ${[leftStaged ? `tmp/${id}/` : '', ...leftReady.map((n) => `ready/${n}`)].filter(Boolean).join(' and ')}; a producer whose step fails removes what it staged`, evidence);
}

export const movesCases: ConformanceCase[] = [
  { name: 'audit/moves', clauses: ['PUB-9', 'ENQ-3', 'ENQ-4', 'LAYOUT-3'], level: 'producer', strength: 'MUST', run: auditMovesCase },
  { name: 'producer/publish-no-replace', clauses: ['PUB-9', 'ENQ-3', 'ENQ-6'], level: 'producer', strength: 'MUST', run: publishNoReplaceCase },
];
