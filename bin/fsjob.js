#!/usr/bin/env node
// The fsjob command. Everything runs inside this process (no second node
// process), so the pid a user sees is the pid doing the work: `kill -9 <pid>`
// really kills the worker. The CLI comes from a bundle compiled from the
// sources on first use (bin/compiled.js), else from the sources through tsx.
import { compiledMain } from './compiled.js';

const argv = process.argv.slice(2);
let main = await compiledMain(argv);
if (main === undefined) {
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../src/cli/main.ts'));
}
process.exitCode = await main(argv);
