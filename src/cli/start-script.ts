/**
 * The entry of the enqueue start-up script: `fsjob enqueue` as one classic
 * script that V8 can keep compiled between runs (src/cli/start-cache.ts
 * says why and how; tools/build/cli-bundle.ts builds it). The script holds
 * main.ts, yargs and everything the enqueue command reaches, and nothing
 * else: another command never runs from it (bin/fsjob.mts hands it only a
 * command line whose command is `enqueue`, src/cli/command-name.ts).
 */
import { commandLine, main } from './main.ts';

/** Runs the command line of this process; resolves to its exit status. */
export function run(): Promise<number> {
  return main(commandLine(), undefined, { commands: ['enqueue'] });
}
