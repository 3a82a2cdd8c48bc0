#!/usr/bin/env node
// The fsjob command. The TypeScript loader is registered inside this process
// (no second node process), so the pid a user sees is the pid doing the work:
// `kill -9 <pid>` really kills the worker.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
