/**
 * A start of `fsjob` loads what its command needs, no more (issue 29 point
 * 2), checked on the built command users run (dist/bin/fsjob.js and its
 * chunks, tools/build/cli-bundle.ts): a loader hook lists every file the
 * start loads, and the build's account of its outputs (dist/.chunk-sources.json,
 * from esbuild's metafile) says which sources those files hold (the
 * generated modules load from dist/src/ as files of their own; the entry's
 * sources are named by the comments esbuild leaves, `// src/cli/start-cache.ts`).
 * Which files, not how long: the time of a start is the bench's
 * (bench/package.bench.ts).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { COMMAND_NAMES } from '../../src/cli/main.ts';
import { CHUNK_SOURCES } from '../../tools/build/cli-bundle.ts';
import { ENTRY, mainCallsLoading, ROOT, startLoading, startWork } from '../support/loaded.ts';

const DIST = join(ROOT, 'dist');

let work: string;
let queue: string;

interface Start {
  status: number | null;
  stdout: string;
  stderr: string;
  /** The files loaded, relative to the repository. */
  files: string[];
  /** The source modules those files hold (esbuild's path comments). */
  sources: string[];
}

/** What each output of the split build holds (dist/.chunk-sources.json, tools/build/cli-bundle.ts). */
let chunkSources: Record<string, string[]>;

/**
 * The source modules that built files hold: for the split build's outputs
 * as its metafile says, for other files (the entry, dist/bin/fsjob.js) by
 * the path comment esbuild leaves at the head of each module.
 */
function sourcesOf(files: readonly string[]): string[] {
  const sources = new Set<string>();
  for (const file of files) {
    const built = chunkSources[relative(DIST, file)];
    if (built !== undefined) {
      for (const source of built) sources.add(source.replace(/^.*?node_modules\//, 'node_modules/'));
      continue;
    }
    for (const match of readFileSync(file, 'utf8').matchAll(/^\/\/ ((?:src|bin|conformance|node_modules)\/\S+|\.\.\/\S+)$/gm)) {
      sources.add((match[1] as string).replace(/^(\.\.\/)+/, '').replace(/^.*?node_modules\//, 'node_modules/'));
    }
  }
  return [...sources].sort();
}

function start(args: readonly string[], env: NodeJS.ProcessEnv = {}): Start {
  const run = startLoading(work, args, env);
  return { ...run, files: run.files.map((file) => file.slice(ROOT.length)), sources: sourcesOf(run.files) };
}

function none(sources: readonly string[], pattern: RegExp): string[] {
  return sources.filter((source) => pattern.test(source));
}

/**
 * Code about queues and records; src/records/bytes.ts is not (the text form
 * of a command-line value, SPEC-3, which every start reads), nor
 * src/records/record-types.ts (names, which validate --type lists).
 */
const QUEUE_CODE = /^src\/(fs|records(?!\/(bytes|record-types)\.ts$)|model|producer|consumer|validator)\//;

/**
 * What no command's help needs: queue code, the suite but the conformance
 * command's declarations, any command's code (commands/<name>-run.ts) and
 * what only a running command uses from src/cli.
 */
const NOT_FOR_HELP = new RegExp(`${QUEUE_CODE.source}|${/^conformance\/(?!runner\/command\.ts$)|^src\/cli\/commands\/[a-z-]+-run\.ts$|^src\/cli\/(queue-arg|progress|report-file|input|json-out)\.ts$/.source}`);

const startUp = suite('what a start of fsjob loads');

startUp.before(async () => {
  ({ work, queue } = await startWork('fsjob-start-up-'));
  chunkSources = JSON.parse(readFileSync(join(DIST, CHUNK_SOURCES), 'utf8')) as Record<string, string[]>;
});

startUp.after(async () => {
  await rm(work, { recursive: true, force: true });
});

startUp('--version loads the entry and nothing of yargs or the queue', () => {
  const run = start(['--version']);
  assert.is(run.status, 0, run.stderr);
  assert.match(run.stdout, /^\d+\.\d+\.\d+/);
  assert.equal(none(run.sources, /^node_modules\/|^src\/(?!cli\/(start-(check|cache)|command-name|thread-pool)\.ts)/), [], 'sources loaded besides the entry');
  assert.ok(run.files.length <= 2, `files: ${run.files.join(', ')}`);
});

startUp('--help loads yargs and its layout, and no queue code', () => {
  const run = start(['--help']);
  assert.is(run.status, 0, run.stderr);
  assert.match(run.stdout, /fsjob enqueue/);
  assert.ok(run.sources.some((source) => source.startsWith('node_modules/yargs/')), 'yargs');
  assert.ok(run.sources.some((source) => source.startsWith('node_modules/cliui/')), 'the help layout (cliui)');
  assert.equal(none(run.sources, QUEUE_CODE), []);
  assert.equal(none(run.sources, /^src\/cli\/commands\//), [], 'no command module: the list of commands is main.ts');
});

// main() of the built CLI called for each command in one process (a start each would cost the suite 16 node starts): each call adds what it loads.
startUp('every command\'s --help, and a usage error of its options, loads its declarations and no queue code, suite or command\'s code', () => {
  const { base, calls } = mainCallsLoading(work, COMMAND_NAMES.flatMap((name) => [[name, '--help'], [name, '--bogus-option']]));
  assert.equal(none(sourcesOf(base), NOT_FOR_HELP), [], 'main.js');
  for (const call of calls) {
    const [name, option] = call.argv as [string, string];
    const what = call.argv.join(' ');
    if (option === '--help') {
      assert.is(call.status, 0, `${what}: ${call.stderr}`);
      assert.match(call.stdout, new RegExp(`^fsjob ${name}\\b[^]*\\nOptions:\\n`), `${what} prints its help`);
    } else {
      assert.is(call.status, 2, `${what}: ${call.stderr}`);
      assert.match(call.stderr, /^fsjob: .* \(see fsjob --help\)\n$/, what);
    }
    assert.equal(none(sourcesOf(call.files), NOT_FOR_HELP), [], what);
    assert.equal(none(call.files, /generated\//), [], `${what}: the generated validators and schemas`);
  }
  // Each command's declarations were loaded, by its own call or an earlier one.
  const loaded = sourcesOf(calls.flatMap((call) => call.files));
  for (const name of COMMAND_NAMES) assert.ok(loaded.includes(name === 'conformance' ? 'conformance/runner/command.ts' : `src/cli/commands/${name === 'resume' ? 'pause' : name}.ts`), `${name}'s declarations`);
});

startUp('enqueue --help, also after options, loads yargs and its layout and the commands\' options, and no queue code', () => {
  for (const args of [['enqueue', '--help'], ['--queue', queue, 'enqueue', '--help']]) {
    const run = start(args);
    assert.is(run.status, 0, run.stderr);
    assert.match(run.stdout, /--max-attempts/, 'the help of enqueue');
    assert.ok(run.sources.includes('src/cli/commands/enqueue.ts'), 'its options');
    assert.equal(none(run.sources, QUEUE_CODE), [], args.join(' '));
    assert.equal(none(run.sources, /^src\/cli\/commands\/[a-z-]+-run\.ts$/), [], "no command's code, enqueue's neither");
  }
});

// From the ES modules: with the start-up cache, enqueue loads no module file at all (test/cli/start-cache.test.ts checks its script).
startUp('enqueue without the start-up cache loads the producer, and no validator, consumer, suite, compiled schemas or help layout', () => {
  const run = start(['enqueue', '--queue', queue, '--', 'true'], { FSJOB_NO_CACHE: '1' });
  assert.is(run.status, 0, run.stderr);
  assert.ok(run.sources.includes('src/producer/enqueue.ts'), 'the producer');
  assert.equal(none([...run.sources, ...run.files], /^src\/(consumer|validator)\/|^conformance\/|generated\/validators\.js|records\/compiled\.ts|node_modules\/(cliui|string-width|wrap-ansi|emoji-regex)\//), []);
  assert.equal(none(run.sources, /^src\/cli\/commands\/(?!enqueue)[a-z-]+-run\.ts$/), [], "no other command's code");
});

startUp('release loads the producer\'s release, and no validator, consumer, suite, compiled schemas or other command', () => {
  const held = spawnSync(process.execPath, [ENTRY, 'enqueue', '--queue', queue, '--hold', '--', 'true'], { encoding: 'utf8' });
  assert.is(held.status, 0, held.stderr);
  const run = start(['release', '--queue', queue, held.stdout.trim()]);
  assert.is(run.status, 0, run.stderr);
  assert.match(run.stdout, /released/);
  assert.ok(run.sources.includes('src/producer/release.ts'), 'the release');
  assert.equal(none([...run.sources, ...run.files], /^src\/(consumer|validator)\/|^conformance\/|generated\/validators\.js|records\/compiled\.ts/), []);
  assert.equal(none(run.sources, /^src\/cli\/commands\/(?!release)[a-z-]+-run\.ts$/), [], "no other command's code");
});

startUp('status loads no consumer, validator or suite', () => {
  const run = start(['status', '--queue', queue]);
  assert.is(run.status, 0, run.stderr);
  assert.equal(none(run.sources, /^src\/(consumer|validator)\/|^conformance\//), []);
});

startUp('the compiled validators load when a record from elsewhere is validated', () => {
  const run = start(['validate', '--type', 'queue', join(queue, 'fsjob.json')]);
  assert.is(run.status, 0, run.stderr);
  // The bundle imports the generated modules from dist/src/ (tools/build/cli-bundle.ts).
  assert.ok(run.files.includes('dist/src/records/generated/validators.js'), `validate checks with the compiled code: ${run.files.join(', ')}`);
});

startUp('an unknown command loads no command module and gets a suggestion', () => {
  const run = start(['enqeue']);
  assert.is(run.status, 2);
  assert.match(run.stderr, /unknown command "enqeue"; did you mean fsjob enqueue\?/, run.stderr);
  assert.equal(none(run.sources, /^src\/cli\/commands\//), []);
  assert.equal(none(run.sources, QUEUE_CODE), []);
});

startUp.run();
