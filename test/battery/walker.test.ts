/**
 * The hostile-input walker (issue 6, I6, I7, I8): every path of a real queue
 * in turn is replaced by a symlink (to a file outside, to a directory
 * outside, dangling, a loop), a FIFO, a socket, a hard link to a file
 * outside, or gets a wide mode or a foreign owner; then every fsjob command
 * runs over it. None may follow or write through it (the outside world is
 * byte-, mode- and mtime-identical afterwards), hang (a 60 s watchdog per
 * command), crash (documented exit statuses, no stack trace), or judge the
 * live worker's running job dead; `fsjob validate` reports the planted object
 * at its path with the code of its hazard.
 *
 * `npm test` runs a deterministic sample spread evenly over the paths and
 * variants; FSJOB_BATTERY_LONG=1 runs the whole cross product. Both counts
 * are printed; FSJOB_WALKER_FROM=k resumes a long run at its k-th pair.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, chownSync, mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { openQueue } from '../../src/model/queue.ts';
import { NOBODY, cleanupAll, rejectsWith } from '../support/helpers.ts';
import {
  DOCUMENTED_STATUSES,
  EXPECTED_FINDINGS,
  VARIANTS,
  buildHostileFixture,
  copyTree,
  crashed,
  makeOutside,
  snapshot,
  unread,
  runFsjob,
  runVariant,
  type CommandRun,
  type HostileFixture,
  type Variant,
} from '../support/walker.ts';

const LONG = process.env['FSJOB_BATTERY_LONG'] === '1';
/** Variants run by npm test; the long run takes them all. */
const SAMPLE = 18;

/** Every (path, variant) pair, path-major; `sample` picks every k-th with k coprime to the variant count, so variants rotate over paths. */
function pairs(paths: readonly string[], dirs: ReadonlySet<string>): { path: string; variant: Variant }[] {
  return paths.flatMap((path) => VARIANTS.filter((variant) => variant !== 'hardlink' || !dirs.has(path)).map((variant) => ({ path, variant })));
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/**
 * `count` pairs taken every k-th (mod the total), k coprime to the total so
 * no pair repeats, and to the variant count so variants rotate over paths.
 * With count = total it is a permutation that spreads early results out.
 */
function sample<T>(all: readonly T[], count: number): T[] {
  const n = all.length;
  let stride = Math.max(count === n ? 11 : 1, Math.floor(n / count));
  while (gcd(stride, n) !== 1 || stride % VARIANTS.length === 0 || gcd(stride, VARIANTS.length) !== 1) stride += 1;
  const picked: T[] = [];
  for (let i = 0; picked.length < Math.min(count, n); i++) picked.push(all[(i * stride) % n] as T);
  return picked;
}

let fixture: HostileFixture;
const walker = suite('the hostile-input walker');
walker.before(async () => {
  fixture = await buildHostileFixture();
});
walker.after(async () => {
  await fixture.stop();
  await cleanupAll();
});

walker('the golden queue audits clean with --strict, so every finding below comes from the planted object', async () => {
  const run = await runFsjob(['validate', '--strict', '--json', fixture.golden], fixture.golden);
  assert.is(run.status, 0, run.stdout);
  assert.ok(fixture.paths.length >= 40, `${fixture.paths.length} paths`);
  for (const part of ['workers/', 'lanes/', 'dedupe/', 'ready/', `jobs/${fixture.ids.running}/claim.1.json`, `jobs/${fixture.ids.running}/state.1.json`, `jobs/${fixture.ids.stdin}/stdin`, `jobs/${fixture.ids.cancelled}/receipt.json`, `jobs/${fixture.ids.retried}/end.1.json`]) {
    assert.ok(fixture.paths.some((path) => path.startsWith(part)), `the queue holds ${part}`);
  }
});

walker('no command follows, writes through, hangs on or crashes on a planted object, and validate reports it', async () => {
  const all = pairs(fixture.paths, fixture.dirs);
  // FSJOB_WALKER_FROM=k resumes a long run at the k-th pair of its order.
  const chosen = sample(all, LONG ? all.length : SAMPLE).slice(LONG ? Number(process.env['FSJOB_WALKER_FROM'] ?? 0) : 0);
  const failures: string[] = [];
  let tried = 0;
  const started = Date.now();
  for (const [index, { path, variant }] of chosen.entries()) {
    const result = await runVariant(fixture, index, path, variant);
    if (result === undefined) continue;
    tried += 1;
    const where = `${variant} at ${path}`;
    for (const run of result.runs) {
      if (!DOCUMENTED_STATUSES.has(run.status)) failures.push(`${where}: fsjob ${run.args[0]} exited ${run.status}: ${run.stderr.slice(0, 300)}`);
      if (crashed(run)) failures.push(`${where}: fsjob ${run.args[0]} crashed: ${run.stderr.slice(0, 600)}`);
    }
    if (result.outsideChanged) failures.push(`${where}: something outside the queue changed`);
    if (!result.runningAlive) failures.push(`${where}: the live worker's running job was stopped`);
    const expected = EXPECTED_FINDINGS[variant];
    if (!result.reported.some((code) => expected.includes(code))) {
      const near = result.findings.map((finding) => `${finding.code} ${finding.path}`).slice(0, 8);
      failures.push(`${where}: validate reported ${JSON.stringify(result.reported)} at the path, expected one of ${expected.join('/')}; findings: ${near.join(', ')}`);
    }
    if (path.includes('/')) {
      // One bad entry inside jobs/, lanes/, dedupe/, ready/ or workers/ never stops a whole-queue command (I7).
      for (const run of result.runs) {
        const whole = ['recover', 'work', 'gc', 'enqueue'].includes(run.args[0] as string) || (run.args[0] === 'status' && run.args.length === 3);
        if (whole && run.status !== 0) failures.push(`${where}: fsjob ${run.args.join(' ')} exited ${run.status}: ${run.stderr.slice(0, 300)}`);
      }
    }
    if (result.runs[0]?.status !== 1) failures.push(`${where}: validate --strict --json exited ${result.runs[0]?.status}, expected 1`);
    if (process.env['WALKER_DEBUG'] !== undefined) console.log(`walker: ${tried} ${where}: ${result.runs.map((run) => `${run.args[0]}=${run.status}`).join(' ')}; ${failures.length} failures so far${failures.length > 0 ? `; last: ${failures.at(-1)}` : ''}`);
  }
  console.log(
    `walker: ${tried} planted objects tried (${LONG ? 'all' : `a sample of ${SAMPLE}`}; the full cross product is ${all.length}: ${fixture.paths.length} paths x ${VARIANTS.length} variants, no hard link to a directory) in ${Math.round((Date.now() - started) / 1000)} s`,
  );
  assert.equal(failures, []);
  assert.ok(tried > 0);
});

walker('a job directory or hold key readers refuse (wide mode, foreign owner) is one damaged entry: status lists the others, gc collects the others', async () => {
  const laneKey = fixture.paths.find((path) => /^lanes\/[0-9a-f]{64}$/.test(path)) as string;
  for (const [path, variant] of [[`jobs/${fixture.ids.stdin}`, 'wide-mode'], [laneKey, 'foreign-owner'], [`jobs/${fixture.ids.finished}`, 'foreign-owner']] as const) {
    const result = (await runVariant(fixture, 1000 + fixture.paths.indexOf(path), path, variant)) as NonNullable<Awaited<ReturnType<typeof runVariant>>>;
    const byName = (name: string, args: number): CommandRun => result.runs.find((run) => run.args[0] === name && run.args.length === args) as CommandRun;
    assert.is(byName('status', 3).status, 0, `${variant} at ${path}: status: ${byName('status', 3).stderr}`);
    assert.is(byName('gc', 4).status, 0, `${variant} at ${path}: gc: ${byName('gc', 4).stderr}`);
    if (path.startsWith('jobs/')) assert.match(byName('status', 3).stdout, new RegExp(`${path.slice(5)}\\s+damaged`));
  }
});

walker('the queue root itself: a symlink to a valid queue, a wide mode or a foreign owner is refused by every command (SEC-1), and nothing is read through the link', async () => {
  const base = join(fixture.dir, 'root-variants');
  mkdirSync(base, { mode: 0o700 });
  const outside = makeOutside(join(base, 'outside'));
  const real = join(outside.dir, 'real-queue');
  copyTree(fixture.golden, real);
  unread(real);
  const link = join(base, 'linked');
  symlinkSync(real, link);
  const wide = join(base, 'wide');
  copyTree(fixture.golden, wide);
  chmodSync(wide, 0o777);
  const foreign = join(base, 'foreign');
  copyTree(fixture.golden, foreign);
  chownSync(foreign, NOBODY, NOBODY);
  const before = snapshot(outside.dir);
  for (const root of [link, wide, foreign]) {
    const q = ['--queue', root];
    for (const args of [['validate', root], ['status', ...q], ['status', ...q, fixture.ids.stdin], ['logs', ...q, fixture.ids.finished], ['recover', ...q], ['cancel', ...q, fixture.ids.stdin], ['work', '--drain', ...q], ['gc', '--all', ...q], ['enqueue', ...q, '--', 'true']]) {
      // --verbose: the refusal cites its clause (operator messages leave clause ids out otherwise).
      const run = await runFsjob([...args.slice(0, 1), '--verbose', ...args.slice(1)], root);
      assert.is(run.status, args[0] === 'validate' ? 2 : 1, `${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, /SEC-1/, `${args.join(' ')}: ${run.stderr}`);
      assert.not.ok(crashed(run), run.stderr);
    }
  }
  await rejectsWith(openQueue(link), 'UNSAFE_QUEUE', { clause: 'SEC-1' });
  assert.is(snapshot(outside.dir), before, 'nothing was read or written through the linked root');
});

walker.run();
