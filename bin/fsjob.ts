#!/usr/bin/env node
/**
 * The fsjob command. Everything runs inside this process (no second node
 * process), so the pid a user sees is the pid doing the work: `kill -9 <pid>`
 * really kills the worker. The build compiles this file to dist/bin/fsjob.js,
 * the package's `bin`; in a checkout, bin/fsjob.js starts that (or this file
 * through tsx when dist/ is not built from the sources as they are).
 *
 * The CLI is imported only after a check that descriptors are left to load
 * it (src/cli/start-check.ts): too few is one line and exit 1, not a loader's
 * stack trace.
 */
import { startFailure, tooFewDescriptors } from '../src/cli/start-check.ts';

const tooFew = tooFewDescriptors();
if (tooFew !== undefined) {
  process.stderr.write(tooFew);
  process.exit(1);
}
let cli: typeof import('../src/cli/main.ts');
try {
  cli = await import('../src/cli/main.ts');
} catch (error) {
  const message = startFailure(error);
  if (message === undefined) throw error;
  process.stderr.write(message);
  process.exit(1);
}
// SPEC-3: the arguments as the bytes given, not node's strings (which write U+FFFD for bytes that are not UTF-8).
process.exitCode = await cli.main(cli.commandLine());
