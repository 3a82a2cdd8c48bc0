/**
 * What `fsjob conformance` does once its options are parsed (command.ts
 * declares them): runs the suite against the manifest's implementation
 * (run.ts), prints each case as it ends and the summary, and writes the
 * --output report.
 */
import type { CliIo } from '../../src/cli/command.ts';
import { FsjobError } from '../../src/base/errors.ts';
import { EXIT } from '../../src/cli/exit.ts';
import { progressWanted, startProgress } from '../../src/cli/progress.ts';
import { writeReportFile } from '../../src/cli/report-file.ts';
import type { CrashMode, PowerMode } from './case.ts';
import { formatCase, formatSummary, summarize } from './report.ts';
import { runConformance, type RoleFilter } from './run.ts';

/** --crash takes a kill mode (quick, full), a power-loss mode (power, power-full), or one of each. */
export function crashModes(values: readonly string[]): { crash: CrashMode; power: PowerMode } {
  const kill = values.filter((v) => v === 'quick' || v === 'full');
  const power = values.filter((v) => v === 'power' || v === 'power-full');
  if (kill.length > 1 || power.length > 1 || (values.includes('none') && values.length > 1)) {
    throw new FsjobError('USAGE', `--crash ${values.join(' ')}: give none, or at most one of quick/full and one of power/power-full`);
  }
  return { crash: (kill[0] ?? 'none') as CrashMode, power: power[0] === undefined ? 'none' : power[0] === 'power' ? 'quick' : 'full' };
}

/** Runs `fsjob conformance` with yargs' parsed arguments; resolves to the exit status. */
export async function runConformanceCommand(args: Record<string, unknown>, io: CliIo): Promise<number> {
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
}
