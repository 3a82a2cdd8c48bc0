#!/usr/bin/env node
// The fsjob command. Everything runs inside this process (no second node
// process), so the pid a user sees is the pid doing the work: `kill -9 <pid>`
// really kills the worker. The CLI comes from a bundle compiled from the
// sources on first use (bin/compiled.js), else from the sources through tsx.
// Too few file descriptors to load it is said in one line (bin/start-check.js).
import { compiledMain } from './compiled.js';
import { startFailure, tooFewDescriptors } from './start-check.js';

const argv = process.argv.slice(2);
const tooFew = tooFewDescriptors();
if (tooFew !== undefined) {
  process.stderr.write(tooFew);
  process.exit(1);
}
let main;
try {
  main = await compiledMain(argv);
  if (main === undefined) {
    const { register } = await import('tsx/esm/api');
    register();
    ({ main } = await import('../src/cli/main.ts'));
  }
} catch (error) {
  const message = startFailure(error);
  if (message === undefined) throw error;
  process.stderr.write(message);
  process.exit(1);
}
process.exitCode = await main(argv);
