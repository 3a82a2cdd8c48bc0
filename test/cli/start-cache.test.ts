/**
 * The start-up cache of `fsjob enqueue` (src/cli/start-cache.ts), on the
 * built command users run (dist/bin/fsjob.js): the first call writes the
 * start-up script and the code V8 compiled for it into the cache
 * directory, later calls run from them; what is not this user's alone is
 * never read or written, and any trouble with the cache leaves the command
 * to the ES modules, never failing it. Which files a start loads comes from
 * a loader hook (as in start-up.test.ts); how long it takes is the bench's
 * (bench/lib/enqueue.ts).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { mkdir, rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ENTRY, ROOT, startLoading, startWork } from '../support/loaded.ts';

const JOB_ID = /^\d{19}-[0-9a-f]{16}\n$/;

let work: string;
let queue: string;

interface Call {
  status: number | null;
  stdout: string;
  stderr: string;
  /** The module files loaded, relative to the repository. */
  files: string[];
}

/** `fsjob enqueue --queue Q -- true` (or `fsjob ARGS`) with the cache in `cacheHome` (XDG_CACHE_HOME), and `env` besides. */
function enqueue(cacheHome: string, env: NodeJS.ProcessEnv = {}, args: readonly string[] = ['enqueue', '--queue', queue, '--', 'true']): Call {
  const run = startLoading(work, args, { FSJOB_NO_CACHE: '', XDG_CACHE_HOME: cacheHome, ...env });
  return { ...run, files: run.files.map((file) => file.slice(ROOT.length)) };
}

/** The cache files of the enqueue script in `dir`. */
function cacheFiles(dir: string): { script: string[]; code: string[] } {
  const names = existsSync(dir) ? readdirSync(dir) : [];
  return { script: names.filter((name) => /^enqueue-[0-9a-f]{16}\.js$/.test(name)), code: names.filter((name) => /^enqueue-[0-9a-f]{16}-node.*\.code$/.test(name)) };
}

function assertEnqueued(call: Call, what: string): void {
  assert.is(call.status, 0, `${what}: ${call.stderr}`);
  assert.match(call.stdout, JOB_ID, `${what} prints the job id`);
  assert.is(call.stderr, '', `${what} says nothing on stderr`);
}

const ES_MODULES = 'dist/bin/chunks/main.js';

const cache = suite('the start-up cache of fsjob enqueue');

cache.before(async () => {
  ({ work, queue } = await startWork('fsjob-start-cache-'));
});

cache.after(async () => {
  await rm(work, { recursive: true, force: true });
});

cache('the first call writes the script and its code (0600, in a 0700 directory); later calls run from them and load no module file but the entry', () => {
  const home = join(work, 'fresh', 'cache'); // neither exists yet
  const dir = join(home, 'fsjob');
  const first = enqueue(home);
  assertEnqueued(first, 'the first call');
  assert.is(lstatSync(dir).mode & 0o777, 0o700, 'the cache directory is 0700');
  assert.is(lstatSync(home).mode & 0o777, 0o700, 'so is the XDG directory it made');
  const { script, code } = cacheFiles(dir);
  assert.is(script.length, 1, `one script: ${readdirSync(dir).join(', ')}`);
  assert.is(code.length, 1, `one code file: ${readdirSync(dir).join(', ')}`);
  for (const name of [...script, ...code]) {
    const stats = lstatSync(join(dir, name));
    assert.ok(stats.isFile(), name);
    assert.is(stats.mode & 0o777, 0o600, `${name} is 0600`);
    assert.is(stats.uid, process.getuid?.(), `${name} is ours`);
  }
  assert.equal(readdirSync(dir).filter((name) => name.endsWith('.tmp')), [], 'no temporary left');
  const codeFile = join(dir, code[0] as string);
  const before = statSync(codeFile);
  const second = enqueue(home);
  assertEnqueued(second, 'the second call');
  assert.equal(second.files, ['dist/bin/fsjob.js'], 'the second call loads the entry alone: the script runs from the cache');
  const after = statSync(codeFile);
  assert.equal([after.ino, after.mtimeMs], [before.ino, before.mtimeMs], 'the code V8 took is not written again');
  assert.is.not(second.stdout, first.stdout, 'two jobs');
  for (const id of [first.stdout.trim(), second.stdout.trim()]) assert.ok(existsSync(join(queue, 'jobs', id, 'spec.json')), `job ${id} is in the queue`);
});

cache('a call that fails writes no code (it compiled part of the path): the next call that enqueues writes it', () => {
  const home = join(work, 'failed-first');
  const dir = join(home, 'fsjob');
  const failed = enqueue(home, {}, ['enqueue', '--queue', join(work, 'no-such-queue'), '--', 'true']);
  assert.is.not(failed.status, 0, 'enqueue into a queue that is not there fails');
  assert.equal(cacheFiles(dir).code, [], `no code file after the failed call: ${existsSync(dir) ? readdirSync(dir).join(', ') : 'no directory'}`);
  assertEnqueued(enqueue(home), 'the next call');
  assert.is(cacheFiles(dir).code.length, 1, 'the call that enqueued wrote the code');
});

cache('the script holds the producer and yargs, and no consumer, validator, suite, compiled validators or help layout', () => {
  const home = join(work, 'contents');
  assertEnqueued(enqueue(home), 'the call');
  const dir = join(home, 'fsjob');
  const text = readFileSync(join(dir, cacheFiles(dir).script[0] as string), 'latin1');
  const sources = [...text.matchAll(/^\/\/ ((?:src|node_modules)\/\S+)$/gm)].map((match) => match[1] as string);
  assert.ok(sources.includes('src/producer/enqueue.ts'), 'the producer');
  assert.ok(sources.includes('src/cli/commands/enqueue.ts'), 'the enqueue command');
  assert.ok(sources.some((source) => source.startsWith('node_modules/yargs/')), 'yargs');
  assert.equal(
    sources.filter((source) => /^src\/(consumer|validator)\/|generated\/validators\.js|records\/compiled\.ts|node_modules\/(cliui|string-width|wrap-ansi|emoji-regex)\//.test(source)),
    [],
  );
  assert.equal(sources.filter((source) => /^src\/cli\/commands\/(?!enqueue)/.test(source)), [], 'no other command');
});

cache('a HOME that does not exist is not made: the call runs without a cache; under an existing HOME, ~/.cache/fsjob is made (0700) and used', async () => {
  const missing = join(work, 'no-home');
  assertEnqueued(enqueue('', { HOME: missing }), 'a call whose HOME is missing');
  assert.not.ok(existsSync(missing), 'nothing was made at the missing HOME');
  const home = join(work, 'home');
  await mkdir(home, { mode: 0o700 });
  assertEnqueued(enqueue('', { HOME: home }), 'a call whose HOME has no .cache');
  assert.is(lstatSync(join(home, '.cache')).mode & 0o777, 0o700, '~/.cache is made 0700');
  assert.is(cacheFiles(join(home, '.cache', 'fsjob')).script.length, 1, 'the script was written under ~/.cache/fsjob');
});

cache('FSJOB_NO_CACHE=1: the ES modules run the call and nothing is written', () => {
  const home = join(work, 'off');
  const call = enqueue(home, { FSJOB_NO_CACHE: '1' });
  assertEnqueued(call, 'the call');
  assert.ok(call.files.includes(ES_MODULES), `the ES modules: ${call.files.join(', ')}`);
  assert.not.ok(existsSync(home), 'no cache directory');
});

cache('a cache directory that is a symbolic link, or that others may write, is not used: the call runs from the ES modules and writes nothing there', async () => {
  const target = join(work, 'elsewhere');
  await mkdir(target, { mode: 0o700 });
  const linked = join(work, 'linked');
  await mkdir(linked, { mode: 0o700 });
  await symlink(target, join(linked, 'fsjob'));
  const viaLink = enqueue(linked);
  assertEnqueued(viaLink, 'the call through a linked directory');
  assert.ok(viaLink.files.includes(ES_MODULES), 'the ES modules ran it');
  assert.equal(readdirSync(target), [], 'nothing written through the link');

  const open = join(work, 'open');
  await mkdir(join(open, 'fsjob'), { recursive: true });
  chmodSync(join(open, 'fsjob'), 0o777);
  const shared = enqueue(open);
  assertEnqueued(shared, 'the call with a directory others may write');
  assert.ok(shared.files.includes(ES_MODULES), 'the ES modules ran it');
  assert.equal(readdirSync(join(open, 'fsjob')), [], 'nothing written there');
});

cache('a script file that is not whole and code that V8 refuses are written anew; the calls work', () => {
  const home = join(work, 'damaged');
  const dir = join(home, 'fsjob');
  assertEnqueued(enqueue(home), 'the first call');
  const { script, code } = cacheFiles(dir);
  const scriptFile = join(dir, script[0] as string);
  const codeFile = join(dir, code[0] as string);
  const whole = statSync(scriptFile).size;
  writeFileSync(scriptFile, readFileSync(scriptFile).subarray(0, 1000)); // a torn write
  writeFileSync(codeFile, Buffer.alloc(4096, 0x5a)); // no code V8 made
  const call = enqueue(home);
  assertEnqueued(call, 'the call after the damage');
  assert.is(statSync(scriptFile).size, whole, 'the script is whole again');
  assert.ok(statSync(codeFile).size > 4096 && readFileSync(codeFile).subarray(0, 64).some((byte) => byte !== 0x5a), 'the code is V8\'s again');
  assertEnqueued(enqueue(home), 'the call after that');
});

cache('the directory keeps the scripts of the 8 builds written last, and removes the rest with their code', () => {
  const home = join(work, 'pruned');
  const dir = join(home, 'fsjob');
  assertEnqueued(enqueue(home), 'the first call');
  const current = (cacheFiles(dir).script[0] as string).slice('enqueue-'.length, -'.js'.length);
  // Ten older builds' files, each older than the last.
  const old = Array.from({ length: 10 }, (_, i) => i.toString(16).repeat(16));
  old.forEach((hash, i) => {
    for (const name of [`enqueue-${hash}.js`, `enqueue-${hash}-node0-v80-x64.code`]) {
      writeFileSync(join(dir, name), 'old', { mode: 0o600 });
      const when = Date.now() / 1000 - 3600 * (i + 2);
      utimesSync(join(dir, name), when, when);
    }
  });
  // A miss (the script gone) writes the script again, and prunes.
  for (const name of cacheFiles(dir).script.filter((name) => name.includes(current))) writeFileSync(join(dir, name), '');
  assertEnqueued(enqueue(home), 'the call that writes the script again');
  const hashes = new Set(readdirSync(dir).map((name) => /^enqueue-([0-9a-f]{16})/.exec(name)?.[1]));
  assert.ok(hashes.has(current), 'the current build stays');
  assert.equal([...hashes].filter((hash) => hash !== current).sort(), old.slice(0, 7).sort(), 'the 7 newest others stay, the 3 oldest go');
});

/** The job's spec.json without what differs from job to job (its id, its instant, the producer's process). */
function specOf(id: string): Record<string, unknown> {
  const { id: _id, created_ms: _created, producer: _producer, ...rest } = JSON.parse(readFileSync(join(queue, 'jobs', id, 'spec.json'), 'utf8')) as Record<string, unknown>;
  return rest;
}

cache('options before the command name (--queue Q enqueue, --queue=Q, -q Q, a value that reads "enqueue") run from the cache and make the job enqueue --queue Q makes', () => {
  const home = join(work, 'options-first');
  assertEnqueued(enqueue(home), 'the call that fills the cache');
  const spellings = [
    ['enqueue', '--queue', queue, '--lane', 'l', '--', 'true'],
    ['--queue', queue, 'enqueue', '--lane', 'l', '--', 'true'],
    [`--queue=${queue}`, '--lane=l', 'enqueue', '--', 'true'],
    ['-q', queue, '--lane', 'l', 'enqueue', '--', 'true'],
    ['--verbose', '--queue', queue, 'enqueue', '--lane', 'l', '--', 'true'],
  ];
  const specs = spellings.map((args) => {
    const call = enqueue(home, {}, args);
    assertEnqueued(call, args.join(' '));
    assert.equal(call.files, ['dist/bin/fsjob.js'], `${args.join(' ')} runs from the cache`);
    return specOf(call.stdout.trim());
  });
  for (const [i, spec] of specs.entries()) assert.equal(spec, specs[0], `${spellings[i]?.join(' ')} makes the same job`);
  assert.is(specs[0]?.['lane'], 'l');
  // The value of --lane is "enqueue": the command is the next positional, as yargs finds it.
  const trap = enqueue(home, {}, ['--lane', 'enqueue', '--queue', queue, 'enqueue', '--', 'true']);
  assertEnqueued(trap, 'the call whose --lane is "enqueue"');
  assert.equal(trap.files, ['dist/bin/fsjob.js'], 'runs from the cache');
  assert.is(specOf(trap.stdout.trim())['lane'], 'enqueue');
  // Another command after the same options is not the script's (status has no --lane: the error is status's).
  const status = enqueue(home, {}, ['--lane', 'enqueue', '--queue', queue, 'status']);
  assert.is(status.status, 2, status.stderr);
  assert.match(status.stderr, /^fsjob: unknown option --lane; did you mean --label\?/);
  assert.ok(status.files.includes(ES_MODULES), `status runs from the ES modules: ${status.files.join(', ')}`);
  const help = enqueue(home, {}, ['--queue', queue, 'enqueue', '--help']);
  assert.is(help.status, 0, help.stderr);
  assert.ok(help.files.includes(ES_MODULES), 'help is laid out by the ES modules');
});

/** `fsjob ARGS` under `ulimit -n limit`, with the cache in `cacheHome` (no loader hook: it would open files of its own). */
function underLimit(limit: number, cacheHome: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync('sh', ['-c', `ulimit -n ${limit} && exec "$@"`, 'sh', process.execPath, ENTRY, ...args], {
    encoding: 'utf8',
    env: { ...process.env, FSJOB_QUEUE: '', FSJOB_NO_CACHE: '', XDG_CACHE_HOME: cacheHome, ...env },
    timeout: 60_000,
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

const TOO_FEW = /^fsjob: too few file descriptors to start \(EMFILE\): ulimit -n (\d+) with \d+ open leaves \d+ free, too few to (.+) \(it needs \d+ free, ulimit -n (\d+) here\); raise the limit \(ulimit -n 1024, LimitNOFILE= in a systemd unit\)\n$/;

cache('at ulimit -n 19 a cached enqueue says, as the uncached one, that too few descriptors are left to start (one line, exit 1); at the limit it names it enqueues', () => {
  const home = join(work, 'limit');
  assertEnqueued(enqueue(home), 'the call that fills the cache');
  const jobs = (): string[] => readdirSync(join(queue, 'jobs')).sort();
  const before = jobs();
  const args = ['enqueue', '--queue', queue, '--', 'true'];
  const cached = underLimit(19, home, args);
  const uncached = underLimit(19, home, args, { FSJOB_NO_CACHE: '1' });
  for (const [what, run] of [['cached', cached], ['uncached', uncached]] as const) {
    assert.is(run.status, 1, `${what}: ${run.stderr}`);
    assert.match(run.stderr, TOO_FEW, `${what} names the limit, what it starts and what to do`);
    assert.match(run.stderr, /ulimit -n 19 /);
    assert.not.match(run.stderr, /locales|en\.json|node_modules/, `${what} names no file of yargs`);
  }
  assert.is(TOO_FEW.exec(cached.stderr)?.[2], 'run fsjob enqueue');
  assert.is(TOO_FEW.exec(uncached.stderr)?.[2], 'load fsjob');
  assert.equal(jobs(), before, 'no job was made');
  // The need it names is enough: the cached enqueue works there.
  const need = Number(TOO_FEW.exec(cached.stderr)?.[3]);
  const at = underLimit(need, home, args);
  assert.is(at.status, 0, `at ulimit -n ${need}: ${at.stderr}`);
  assert.match(at.stdout, JOB_ID);
  assert.ok(existsSync(join(queue, 'jobs', at.stdout.trim(), 'spec.json')), 'the job is in the queue');
});

cache.run();
