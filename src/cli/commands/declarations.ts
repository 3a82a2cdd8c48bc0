/**
 * The declarations (options, help) of every command, in one module that
 * main.ts loads when a command runs or its help is asked for: they cost one
 * file, not one each (in dist/ a file of its own costs the install a disk
 * block, tools/build/cli-bundle.ts). Each command's code is in its
 * <name>-run.ts, loaded when it runs. The enqueue start-up script holds
 * enqueue's alone (tools/build/cli-bundle.ts).
 */
export { cancelCommand } from './cancel.ts';
export { demoCommand } from './demo.ts';
export { enqueueCommand } from './enqueue.ts';
export { gcCommand } from './gc.ts';
export { initCommand } from './init.ts';
export { logsCommand } from './logs.ts';
export { pauseCommand, resumeCommand } from './pause.ts';
export { recoverCommand } from './recover.ts';
export { releaseCommand } from './release.ts';
export { retryCommand } from './retry.ts';
export { statusCommand } from './status.ts';
export { validateCommand } from './validate.ts';
export { waitCommand } from './wait.ts';
export { workCommand } from './work.ts';
