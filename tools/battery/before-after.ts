/**
 * Runs the hostile before/after battery (test/battery/before-after.battery.ts:
 * issue 19's points 1, 2, 6, 9, 10 (SIGHUP), 11, 12 and issue 28's points 1
 * to 5 through the real CLI) against the fsjob
 * of another commit, then against this checkout's, and prints one table:
 * per case, whether it held before and after, with the first line of each
 * failure (the evidence). A case that fails before and holds after shows the
 * hole and its fix.
 *
 *   npm run battery:before-after -- REV [--only PATTERN]
 *
 * --only runs the cases whose names match PATTERN (e.g. 'point 9').
 * REV's whole tree is extracted (git archive) into .scratch/before-after/<rev>
 * with this checkout's node_modules linked in and built (its dist/), and its
 * bin/fsjob.js is what the battery starts (FSJOB_TEST_CLI). Logs: .scratch/before-after/<rev>-{before,after}.jsonl.
 * Exit status 1 when a case fails on this checkout.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

interface CaseResult {
  name: string;
  ok: boolean;
  ms: number;
  why?: string;
}

function git(...args: string[]): string {
  return execFileSync('git', args, { cwd: REPO, encoding: 'utf8' }).trim();
}

/**
 * REV's tree, extracted once, with node_modules linked from this checkout,
 * and built (its own tools/build/build.ts): the battery starts REV's fsjob as
 * a user has it, from dist/, not its sources through tsx, whose loader starts
 * differently (under a low `ulimit -n` it hangs where the built CLI answers).
 */
function extract(rev: string): string {
  const dir = path.join(REPO, '.scratch', 'before-after', rev);
  if (!existsSync(path.join(dir, 'bin', 'fsjob.js'))) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    execFileSync('sh', ['-c', 'git archive "$1" | tar -x -C "$2"', 'sh', rev, dir], { cwd: REPO });
  }
  if (!existsSync(path.join(dir, 'node_modules'))) symlinkSync(path.join(REPO, 'node_modules'), path.join(dir, 'node_modules'));
  if (existsSync(path.join(dir, 'tools', 'build', 'build.ts')) && !existsSync(path.join(dir, 'dist', 'bin', 'fsjob.js'))) {
    process.stdout.write(`building ${rev} in ${dir}\n`);
    execFileSync(process.execPath, ['--import', 'tsx', 'tools/build/build.ts'], { cwd: dir, stdio: 'inherit' });
  }
  return dir;
}

function runBattery(label: string, log: string, env: NodeJS.ProcessEnv): CaseResult[] {
  rmSync(log, { force: true });
  process.stdout.write(`\n== ${label}\n`);
  spawnSync(process.execPath, ['--import', 'tsx', 'node_modules/uvu/bin.js', 'test/battery', 'before-after\\.battery\\.ts$'], {
    cwd: REPO,
    stdio: 'inherit',
    env: { ...process.env, ...env, FSJOB_BEFORE_AFTER_LOG: log },
  });
  if (!existsSync(log)) return [];
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as CaseResult);
}

const cell = (r: CaseResult | undefined): string => (r === undefined ? 'not run' : r.ok ? `held (${(r.ms / 1000).toFixed(0)} s)` : `FAILED: ${(r.why ?? '').replace(/\|/g, '\\|')}`);

function main(): number {
  const rev = process.argv[2];
  const at = process.argv.indexOf('--only');
  const only = at > 2 ? process.argv[at + 1] : undefined;
  if (rev === undefined || rev.startsWith('-') || (at > 2 && only === undefined)) {
    process.stderr.write('usage: npm run battery:before-after -- REV [--only PATTERN]   (the commit to compare this checkout with; the cases whose names match)\n');
    return 2;
  }
  if (only !== undefined) process.env['FSJOB_BEFORE_AFTER_ONLY'] = only;
  const before = git('rev-parse', '--short', `${rev}^{commit}`);
  const after = `${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain', '--untracked-files=no') === '' ? '' : ' + uncommitted changes'}`;
  const dir = extract(before);
  if (/\s/.test(dir)) throw new Error(`the extracted tree's path has a space (${dir}): FSJOB_TEST_CLI is split on spaces`);
  const logs = path.join(REPO, '.scratch', 'before-after');
  const old = runBattery(`before: ${before} (${dir}/bin/fsjob.js)`, path.join(logs, `${before}-before.jsonl`), {
    FSJOB_TEST_CLI: `${process.execPath} ${path.join(dir, 'bin', 'fsjob.js')}`,
    // A REV without a build runs its sources through tsx, quietly.
    ...(existsSync(path.join(dir, 'dist', 'bin', 'fsjob.js')) ? {} : { FSJOB_TSX: '1' }),
  });
  const now = runBattery(`after: ${after} (this checkout)`, path.join(logs, `${before}-after.jsonl`), {});
  const names = [...new Set([...old, ...now].map((r) => r.name))];
  process.stdout.write(`\n| case | before (${before}) | after (${after}) |\n|---|---|---|\n`);
  for (const name of names) process.stdout.write(`| ${name.replace(/\|/g, '\\|')} | ${cell(old.find((r) => r.name === name))} | ${cell(now.find((r) => r.name === name))} |\n`);
  return now.length > 0 && now.every((r) => r.ok) ? 0 : 1;
}

process.exitCode = main();
