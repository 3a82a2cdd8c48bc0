#!/usr/bin/env node
/**
 * The fsjob command. Everything runs inside this process (no second node
 * process), so the pid a user sees is the pid doing the work: `kill -9 <pid>`
 * really kills the worker. The build compiles this file to dist/bin/fsjob.js,
 * the package's `bin`; in a checkout, bin/fsjob.js starts that (or this file
 * through tsx when dist/ is not built from the sources as they are).
 */
import { main } from '../src/cli/main.ts';

process.exitCode = await main(process.argv.slice(2));
