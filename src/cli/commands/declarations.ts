/**
 * The declarations (options, help) of every command but enqueue, in one
 * module that main.ts loads when one of them is asked for: the commands'
 * help costs one file, not one each (in dist/ a file of its own costs the
 * install a disk block, tools/build/cli-bundle.ts). Each command's code is
 * in its <name>-run.ts, loaded when it runs. enqueue's own declarations
 * load alone (commands/enqueue.ts): scripts call it in loops.
 */
export { cancelCommand } from './cancel.ts';
export { demoCommand } from './demo.ts';
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
