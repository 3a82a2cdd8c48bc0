#!/usr/bin/env node
/**
 * The fsjob command. Everything runs inside this process (no second node
 * process), so the pid a user sees is the pid doing the work: `kill -9 <pid>`
 * really kills the worker. The build makes this file dist/bin/fsjob.js,
 * the package's `bin` (tools/build/cli-bundle.ts); in a checkout,
 * bin/fsjob.js starts that (or this file through tsx when dist/ is not
 * built from the sources as they are).
 *
 * dist/bin/fsjob.js is a CommonJS script (dist/bin/package.json says so):
 * node starts one ~5 ms sooner than an ES module, whose loader it would
 * first set up, and every command pays that. So this file has no
 * top-level await and imports nothing it does not bundle; the CLI itself
 * is ES modules (dist/bin/chunks/, where a package.json says "module"),
 * loaded by import(). Before that import, and only then, libuv's thread
 * pool can still be sized: `fsjob work` gets one for its concurrency
 * (src/cli/thread-pool.ts).
 *
 * It is .mts, an ES module wherever it sits: bin/package.json makes the
 * checkout's launcher beside it, bin/fsjob.js, a CommonJS script, for the
 * same two reasons.
 *
 * `fsjob --version` answers here, before anything else loads. `fsjob
 * enqueue`, which scripts call in loops, runs from the start-up cache when
 * it can (src/cli/start-cache.ts). Otherwise the CLI is imported, after a
 * check that descriptors are left to load it (src/cli/start-check.ts): too
 * few is one line and exit 1, not a loader's stack trace. This file also
 * wires the conformance suite's command into the CLI: the suite sits
 * beside the library (conformance/ next to src/ in the checkout,
 * dist/conformance/ next to dist/bin/), is loaded from there when `fsjob
 * conformance` runs (in dist/, an entry of its own of the build, whose
 * chunks it shares with the command), and src/ never imports it.
 */
import { writeSync } from 'node:fs';
import { cacheDirectory, runFromCache, servedByStartScript, type StartScript } from '../src/cli/start-cache.ts';
import { ENQUEUE_START_DESCRIPTORS, startFailure, tooFewDescriptors } from '../src/cli/start-check.ts';
import { sizeThreadPool } from '../src/cli/thread-pool.ts';

/** package.json's version, written in by the build (tools/build/build.ts); from the sources yargs answers --version. */
declare const __FSJOB_VERSION: string | undefined;
/** What the build says of the enqueue start-up script it made, as JSON (tools/build/cli-bundle.ts); from the sources there is none. */
declare const __FSJOB_START_SCRIPT: string | undefined;

/** Runs the command of this process's arguments; resolves once its exit status is set. */
async function start(argv: readonly string[]): Promise<void> {
  // The start-up script loads no module file (two files read one after the other): it needs what the enqueue itself holds,
  // and says so below that as the module load does below its need; descriptors that run out in the command itself
  // are its error, which names the limit and what it was opening (src/base/descriptors.ts).
  if (servedByStartScript(argv) && typeof __FSJOB_START_SCRIPT === 'string' && cacheDirectory() !== undefined) {
    refuseBelow(tooFewDescriptors(ENQUEUE_START_DESCRIPTORS, 'run fsjob enqueue'));
    const cached = await runFromCache(JSON.parse(__FSJOB_START_SCRIPT) as StartScript, import.meta.url);
    if (cached !== undefined) {
      process.exitCode = cached;
      return;
    }
  }
  refuseBelow(tooFewDescriptors());
  let cli: typeof import('../src/cli/main.ts');
  try {
    cli = await import('../src/cli/main.ts');
  } catch (error) {
    const message = startFailure(error);
    if (message === undefined) throw error;
    process.stderr.write(message);
    process.exit(1);
  }
  // A URL held in a variable: the bundler leaves the suite out of the command's own code and it loads from beside the command.
  const suite = new URL(`../conformance/runner/command${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url).href;
  // SPEC-3: the arguments as the bytes given, not node's strings (which write U+FFFD for bytes that are not UTF-8).
  process.exitCode = await cli.main(cli.commandLine(), undefined, {
    conformance: async () => ((await import(suite)) as typeof import('../conformance/runner/command.ts')).conformanceCommand,
  });
}

/** Too few descriptors to start (start-check.ts): its one line, and exit 1. */
function refuseBelow(tooFew: string | undefined): void {
  if (tooFew === undefined) return;
  process.stderr.write(tooFew);
  process.exit(1);
}

/**
 * Writes the version to the descriptor itself: process.stdout is a stream
 * that node makes when first asked for, loading its streams (~1.5 ms, a
 * thirtieth of the whole start). One that would block (a non-blocking
 * pipe) gets the stream; a reader that went away gets nothing.
 */
function printVersion(line: string): void {
  try {
    writeSync(1, line);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EAGAIN') process.stdout.write(line);
  }
}

const argv = process.argv.slice(2);
if (argv.length === 1 && argv[0] === '--version' && typeof __FSJOB_VERSION === 'string') {
  printVersion(`${__FSJOB_VERSION}\n`);
} else {
  // Before anything loads through the ES module loader, which starts libuv's pool (src/cli/thread-pool.ts).
  sizeThreadPool(argv);
  start(argv).catch((error: unknown) => {
    // What main() does not handle (it handles every command's errors): a CLI that could not load.
    process.stderr.write(`fsjob: cannot start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  });
}
