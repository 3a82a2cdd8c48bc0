/**
 * `npm run conformance:mutants`: runs every broken variant (or those named)
 * against its cases in the quick run, `--repeat` times in a row, several
 * variants at once through one shared pool, and records the outcome in
 * kills.json (then regenerate COVERAGE.md with `npm run gen:coverage`).
 *
 *   node --import tsx test/broken-impls/mutants.ts [--repeat 3] [--parallel 4] [--no-write] [NAME...]
 *
 * Exit status 0 when every variant was killed in every run.
 */
import { writeFileSync } from 'node:fs';
import { Pool } from '../../conformance/runner/pool.ts';
import { formatCase } from '../../conformance/runner/report.ts';
import { KILLS_FILE, loadKills, loadVariants, runVariant, variantDigest, type KillRecord } from './variants.ts';

function parse(argv: string[]): { repeat: number; parallel: number; write: boolean; names: string[] } {
  const out = { repeat: 3, parallel: 4, write: true, names: [] as string[] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--repeat') out.repeat = Number(argv[++i]);
    else if (arg === '--parallel') out.parallel = Number(argv[++i]);
    else if (arg === '--no-write') out.write = false;
    else if (arg.startsWith('--')) throw new Error(`unknown option ${arg}`);
    else out.names.push(arg.replace(/\/$/, '').replace(/^.*\//, ''));
  }
  if (!Number.isInteger(out.repeat) || out.repeat < 1) throw new Error('--repeat must be a positive integer');
  return out;
}

const options = parse(process.argv.slice(2));
const all = loadVariants();
const unknown = options.names.filter((name) => !all.some((v) => v.name === name));
if (unknown.length > 0) {
  console.error(`no such variant: ${unknown.join(' ')}`);
  process.exit(2);
}
const chosen = options.names.length === 0 ? all : all.filter((v) => options.names.includes(v.name));
const pool = new Pool(options.parallel);
const began = Date.now();
let failed = 0;
const records: Record<string, KillRecord> = {};
await Promise.all(
  chosen.map(async (variant) => {
    const seconds: number[] = [];
    let killed = 0;
    // The runs of one variant are consecutive: "three times in a row".
    for (let run = 1; run <= options.repeat; run++) {
      const outcome = await runVariant(variant, { pool });
      seconds.push(outcome.seconds);
      if (outcome.killed) killed += 1;
      const head = `${outcome.killed ? 'killed' : 'ALIVE '} ${variant.name} [${variant.clause}] run ${run}/${options.repeat} ${outcome.seconds.toFixed(1)}s`;
      const detail = outcome.killed ? [] : [...outcome.problems.map((p) => `     ${p}`), ...outcome.results.filter((r) => r.status === 'fail').flatMap((r) => formatCase(r)).slice(0, 12)];
      console.log([head, ...detail].join('\n'));
    }
    if (killed < options.repeat) failed += 1;
    seconds.sort((a, b) => a - b);
    records[variant.name] = { digest: variantDigest(variant), runs: options.repeat, killed, seconds: Math.round((seconds[Math.floor(seconds.length / 2)] ?? 0) * 10) / 10 };
  }),
);
if (options.write) {
  const kills = { ...loadKills(), ...records };
  for (const name of Object.keys(kills)) if (!all.some((v) => v.name === name)) delete kills[name];
  const sorted = Object.fromEntries(Object.entries(kills).sort(([a], [b]) => a.localeCompare(b)));
  writeFileSync(KILLS_FILE, `${JSON.stringify(sorted, null, 2)}\n`);
}
console.log(`${chosen.length - failed} of ${chosen.length} variants killed in ${options.repeat} of ${options.repeat} runs; ${((Date.now() - began) / 1000).toFixed(0)} s${options.write ? `; ${KILLS_FILE} updated (npm run gen:coverage next)` : ''}`);
process.exit(failed === 0 ? 0 : 1);
