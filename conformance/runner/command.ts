/**
 * `fsjob conformance [--impl MANIFEST] [--role R] [--crash MODE...] [--only CLAUSE...] [--json] [--output FILE] [--keep]`:
 * run the conformance suite (conformance/runner) against an implementation
 * described by a manifest (spec/tools.md, MANIFEST-1), the reference by default.
 *
 * The suite's own command: the CLI (src/cli/main.ts) lists it, and the
 * command's entry (bin/fsjob.ts) hands main this module's loader, so the
 * library never imports the suite. The runner loads when the command runs.
 */
import type { RoleFilter } from './run.ts';
import type { CrashMode, PowerMode } from './case.ts';
import { FsjobError } from '../../src/base/errors.ts';
import type { FsjobCommand } from '../../src/cli/command.ts';
import { EXIT } from '../../src/cli/exit.ts';
import { progressWanted, startProgress } from '../../src/cli/progress.ts';
import { writeReportFile } from '../../src/cli/report-file.ts';

/** --crash takes a kill mode (quick, full), a power-loss mode (power, power-full), or one of each. */
export function crashModes(values: readonly string[]): { crash: CrashMode; power: PowerMode } {
  const kill = values.filter((v) => v === 'quick' || v === 'full');
  const power = values.filter((v) => v === 'power' || v === 'power-full');
  if (kill.length > 1 || power.length > 1 || (values.includes('none') && values.length > 1)) {
    throw new FsjobError('USAGE', `--crash ${values.join(' ')}: give none, or at most one of quick/full and one of power/power-full`);
  }
  return { crash: (kill[0] ?? 'none') as CrashMode, power: power[0] === undefined ? 'none' : power[0] === 'power' ? 'quick' : 'full' };
}

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
  run: async (args, io) => {
    // Loaded here, not at startup: every other fsjob command would pay for the whole suite.
    const { runConformance } = await import('./run.ts');
    const { formatCase, formatSummary, summarize } = await import('./report.ts');
    const json = args['json'] === true;
    const progress = startProgress(io, 'conformance', 'cases', progressWanted(io, args));
    const out = progress.io;
    const outcome = await runConformance({
      ...(typeof args['impl'] === 'string' ? { impl: args['impl'] } : {}),
      role: args['role'] as RoleFilter,
      ...crashModes((args['crash'] as string[] | undefined) ?? ['none']),
      only: (args['only'] as string[] | undefined) ?? [],
      cases: (args['case'] as string[] | undefined) ?? [],
      keep: args['keep'] === true,
      allVectors: args['all-vectors'] === true,
      parallel: Number(args['parallel']) || 4,
      onStart: (manifest) => {
        if (!json) out.stdout(`fsjob conformance: ${manifest.name} (${manifest.file})\n`);
      },
      onResult: (result) => {
        progress.add();
        if (!json) out.stdout(`${formatCase(result).join('\n')}\n`);
      },
    }).finally(() => progress.end());
    const summary = summarize(outcome.results, outcome.report.summary.crash_points);
    if (typeof args['output'] === 'string') await writeReportFile(args['output'], `${JSON.stringify(outcome.report, null, 2)}\n`);
    if (json) io.stdout(`${JSON.stringify(outcome.report, null, 2)}\n`);
    else {
      if (args['keep'] === true) io.stdout(`files kept in ${outcome.workdir}\n`);
      if (summary.crashPoints > 0) io.stdout(`${summary.crashPoints} crash points checked\n`);
      io.stdout(`${formatSummary(summary)}\n`);
    }
    return summary.mustFailed === 0 ? EXIT.OK : EXIT.FAILURE;
  },
};
