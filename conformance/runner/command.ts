/**
 * `fsjob conformance [--impl MANIFEST] [--role R] [--crash MODE...] [--only CLAUSE...] [--json] [--output FILE] [--keep]`:
 * run the conformance suite (conformance/runner) against an implementation
 * described by a manifest (spec/tools.md, MANIFEST-1), the reference by default.
 *
 * The suite's own command: the CLI (src/cli/main.ts) lists it, and the
 * command's entry (bin/fsjob.mts) hands main this module's loader, so the
 * library never imports the suite. This module declares the command's
 * options and help; command-run.ts runs the suite, loaded only then (every
 * other fsjob command, and this one's --help, would pay for the whole suite).
 */
import type { FsjobCommand } from '../../src/cli/command.ts';

export const conformanceCommand: FsjobCommand = {
  citesClauses: true,
  builder: (yargs) =>
    yargs
      .option('impl', {
        describe: 'Manifest of the implementation under test (schemas/manifest.schema.json); default: the reference, conformance/impls/reference/manifest.json',
        type: 'string',
      })
      .option('role', {
        describe: 'Test one conformance level of the implementation (spec/README.md), or all of them',
        choices: ['producer', 'consumer', 'validator', 'all'],
        default: 'all',
        type: 'string',
      })
      .option('crash', {
        describe: 'Crash injection: none; kills: quick (about 12 kill points per scenario), full (every mutating filesystem call); power losses: power (a sample of the states a power loss leaves), power-full (every crash point); one of each may be given (--crash quick power)',
        choices: ['none', 'quick', 'full', 'power', 'power-full'],
        default: ['none'],
        type: 'array',
        string: true,
      })
      .option('only', {
        describe: 'Run only the cases that check one of these clause ids (CLAIM-5, SEC-2, I3, ...)',
        type: 'array',
        string: true,
      })
      .option('case', {
        describe: 'Run only these cases (a name, or a prefix ending in "/" such as hostile/)',
        type: 'array',
        string: true,
      })
      .option('json', {
        describe: 'Write the report as JSON (schemas/conformance-report.schema.json) instead of text',
        type: 'boolean',
        default: false,
      })
      .option('output', {
        describe: 'Also write the JSON report to FILE, complete or not at all (for CI: the file is whole or absent)',
        type: 'string',
        requiresArg: true,
      })
      .option('keep', {
        describe: 'Keep every case\'s queues and logs in the temporary directory and print where',
        type: 'boolean',
        default: false,
      })
      .option('all-vectors', {
        describe: 'Run every record vector through the implementation instead of one per rule',
        type: 'boolean',
        default: false,
      })
      .option('parallel', {
        describe: 'Cases (or crash points) run at once',
        type: 'number',
        default: 4,
      })
      .example('$0 conformance', 'test the reference implementation')
      .example('$0 conformance --impl conformance/impls/sh/manifest.json --crash quick', 'test the POSIX sh implementation with a quick crash sweep')
      .example('$0 conformance --impl m.json --crash quick power', 'kills at a spread of calls, and the states a power loss leaves')
      .example('$0 conformance --impl m.json --only CLAIM-5 I2', 'only the cases about exclusive claims')
      .example('$0 conformance --impl m.json --output conformance.json', 'progress as text, the JSON report in conformance.json')
      .epilog('Each line is ok, FAIL or skip with the clauses the case checks; a failure names the clause it broke, the crash point and the evidence on disk. Exit status: 0 when every MUST case passes, 1 otherwise, 2 usage.'),
  run: async (args, io) => (await import('./command-run.ts')).runConformanceCommand(args, io),
};
