/**
 * Every command's --json output, from real runs of the CLI against a real
 * queue served by a real worker, validated against its schema in
 * schemas/output/ (and the record schemas it refers to), in one key style.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createAjv } from '../../tools/gen/schema-compiler.ts';
import { SCHEMA_BASE } from '../../src/records/schemas.ts';
import { SCHEMAS_DIR } from '../../tools/gen/schema-files.ts';
import { COMMAND_NAMES } from '../../src/cli/main.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { runFsjob, type CliRun } from '../support/cli.ts';

const OUTPUT_DIR = join(SCHEMAS_DIR, 'output');
const ajv = createAjv();
for (const file of readdirSync(OUTPUT_DIR).sort()) ajv.addSchema(JSON.parse(readFileSync(join(OUTPUT_DIR, file), 'utf8')) as object);

function check(schema: string, value: unknown, where: string): void {
  // "../report": a schema of schemas/ itself; any other name: schemas/output/.
  const validate = ajv.getSchema(schema.startsWith('../') ? `${SCHEMA_BASE}${schema.slice(3)}.schema.json` : `${SCHEMA_BASE}output/${schema}.schema.json`);
  if (validate === undefined) throw new Error(`no schema ${schema}`);
  const ok = validate(value);
  assert.ok(ok, `${where} does not match ${schema}: ${JSON.stringify(validate.errors?.slice(0, 3))}\n${JSON.stringify(value).slice(0, 1500)}`);
}

/** Maps whose member names are the job's own data (env, labels, payload, result): not our key style. */
const DATA_MEMBERS = new Set(['env', 'labels', 'payload', 'result', 'finished', 'ended', 'statuses', 'outcomes']);

/** Every member name outside data maps is the records' snake_case. */
function keyStyle(value: unknown, where: string): void {
  if (Array.isArray(value)) return value.forEach((item, index) => keyStyle(item, `${where}[${index}]`));
  if (typeof value !== 'object' || value === null) return;
  for (const [name, member] of Object.entries(value)) {
    assert.match(name, /^[a-z][a-z0-9_]*$/, `${where}: member ${JSON.stringify(name)} is not snake_case`);
    if (!DATA_MEMBERS.has(name)) keyStyle(member, `${where}.${name}`);
  }
}

function json(run: CliRun, where: string): unknown {
  try {
    return JSON.parse(run.stdout);
  } catch {
    throw new Error(`${where} printed no JSON (exit ${run.status}): ${run.stdout.slice(0, 500)} ${run.stderr.slice(0, 500)}`);
  }
}

function lines(text: string): unknown[] {
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as unknown);
}

const output = suite('fsjob --json: one schema per command, real output, one key style');
output.after(cleanupAll);

output('every command is listed by fsjob --help and has a schema of its JSON output', async () => {
  const dir = await freshDir('fsjob-json');
  const help = await runFsjob(['--help'], { cwd: dir });
  assert.is(help.status, 0, help.stderr);
  for (const name of COMMAND_NAMES) assert.match(help.stdout, new RegExp(`fsjob ${name}\\b`), `fsjob --help lists ${name}`);
  const schemas = new Set(readdirSync(OUTPUT_DIR).map((file) => file.replace(/\.schema\.json$/, '')));
  // validate and conformance print the report formats of spec/tools.md (schemas/report, conformance-report).
  // retry prints what enqueue prints (enqueue.schema.json).
  for (const name of COMMAND_NAMES.filter((command) => !['validate', 'conformance', 'retry'].includes(command))) assert.ok(schemas.has(name), `schemas/output/${name}.schema.json`);
});

output('init, enqueue, work, status, wait, logs, retry, cancel, gc, recover, validate, demo and errors print what their schemas say', async () => {
  const dir = await freshDir('fsjob-json');
  const root = join(dir, 'q');
  const run = (args: string[], input?: string): Promise<CliRun> => runFsjob(args, { cwd: dir, ...(input === undefined ? {} : { input }) });
  const q = ['-q', root];
  const init = await run(['init', ...q, '--json']);
  check('init', json(init, 'init'), 'init');
  const [ok, failing, batch] = await Promise.all([
    run(['enqueue', ...q, '--json', '--env', 'camelCase=kept', '--label', 'team=web', '--', 'sh', '-c', 'echo out; echo err >&2']),
    run(['enqueue', ...q, '--json', '--max-output', '16', '--', 'sh', '-c', 'seq 1 100; exit 3']),
    run(['enqueue', ...q, '--json', '--batch', '-'], '{"argv":["true"]}\n{"argv":[]}\n'),
  ]);
  for (const [name, result] of [['enqueue', ok], ['enqueue (failing)', failing]] as const) check('enqueue', json(result, name), name);
  assert.is(batch.status, 1, 'one batch line is refused');
  for (const line of lines(batch.stdout)) check('enqueue', line, 'enqueue --batch');
  const okId = (json(ok, 'enqueue') as { id: string }).id;
  const failId = (json(failing, 'enqueue') as { id: string }).id;

  const work = await run(['work', ...q, '--drain', '--json']);
  assert.is(work.status, 0, work.stderr);
  check('work', json(work, 'work'), 'work summary');
  const events = lines(work.stderr);
  assert.ok(events.length >= 4, work.stderr);
  for (const event of events) check('work-event', event, 'work event');
  assert.ok(events.every((event) => typeof (event as { time_ms?: unknown }).time_ms === 'number'), 'every event has its time');

  const [list, one, waitOne, waitTwo, logs, retried, gcDry, recovered, validated, missing, badFlag] = await Promise.all([
    run(['status', ...q, '--json']),
    run(['status', ...q, okId.slice(20, 28), '--json']),
    run(['wait', ...q, okId, '--json']),
    run(['wait', ...q, okId, failId, '--json']),
    run(['logs', ...q, okId, failId, '--json']),
    run(['retry', ...q, failId, '--json']),
    run(['gc', ...q, '--all', '--dry-run', '--json']),
    run(['recover', ...q, '--json']),
    run(['validate', root, '--json']),
    run(['wait', ...q, 'ffffffffffff', '--json']),
    run(['enqueue', ...q, '--json', '--timeout', '8d', '--', 'true']),
  ]);
  check('status', json(list, 'status'), 'status');
  check('status', json(one, 'status ID'), 'status ID');
  check('wait', json(waitOne, 'wait'), 'wait');
  const waitLines = lines(waitTwo.stdout) as { job_id: string }[];
  for (const line of waitLines) check('wait', line, 'wait A B');
  assert.equal(waitLines.map((line) => line.job_id), [okId, failId], 'one receipt per line');
  assert.is(waitTwo.status, 3, 'several ids: the exit code of the first that did not exit 0');
  const logLines = lines(logs.stdout) as { job_id: string; truncated: boolean; dropped: number; text: string }[];
  for (const line of logLines) check('logs', line, 'logs');
  assert.equal(
    logLines.map((line) => [line.job_id, line.truncated, line.dropped, line.text]),
    [
      [okId, false, 0, 'out\n'],
      [failId, true, 292 - 16, '1\n2\n3\n4\n5\n6\n7\n8\n'],
    ],
  );
  check('enqueue', json(retried, 'retry'), 'retry');
  const retryId = (json(retried, 'retry') as { id: string }).id;
  const cancelled = await run(['cancel', ...q, retryId, '--json']);
  check('cancel', json(cancelled, 'cancel'), 'cancel');
  check('gc', json(gcDry, 'gc'), 'gc');
  check('recover', json(recovered, 'recover'), 'recover');
  check('../report', json(validated, 'validate'), 'validate');
  assert.is(missing.status, 4);
  check('error', json(missing, 'wait (no such job)'), 'error');
  assert.is(badFlag.status, 2);
  check('error', json(badFlag, 'enqueue --timeout 8d'), 'error');
  assert.match((json(badFlag, 'enqueue') as { error: { message: string } }).error.message, /--timeout 8d .*at most 7d/);

  const [paused, again] = [await run(['pause', ...q, '--reason', 'json test', '--json']), await run(['pause', ...q, '--json'])];
  check('pause', json(paused, 'pause'), 'pause');
  check('pause', json(again, 'pause again'), 'pause again');
  assert.equal([(json(paused, 'pause') as { published: boolean }).published, (json(again, 'pause') as { published: boolean }).published], [true, false]);
  const pausedStatus = await run(['status', ...q, '--json']);
  check('status', json(pausedStatus, 'status (paused)'), 'status (paused)');
  assert.is((json(pausedStatus, 'status') as { paused: boolean }).paused, true);
  const pausedWork = await run(['work', ...q, '--drain', '--json']);
  for (const event of lines(pausedWork.stderr)) check('work-event', event, 'work event (paused)');
  const resumed = await run(['resume', ...q, '--json']);
  check('resume', json(resumed, 'resume'), 'resume');

  const demo = await run(['demo', '--json', '--keep']);
  check('demo', json(demo, 'demo'), 'demo');
  const kept = json(demo, 'demo') as { queue: string; kept: boolean };
  assert.ok(kept.kept && existsSync(kept.queue), 'demo --keep keeps its queue');
  const audit = await run(['validate', kept.queue]);
  assert.is(audit.status, 0, `the kept demo queue is clean: ${audit.stdout}`);
  await rm(dirname(kept.queue), { recursive: true, force: true });

  for (const [name, result] of Object.entries({ init, ok, work, list, one, gcDry, recovered, cancelled, missing, demo })) keyStyle(json(result, name), name);
  for (const event of events) keyStyle(event, 'work event');
  for (const line of logLines) keyStyle(line, 'logs');
  for (const line of waitLines) keyStyle(line, 'wait');
});

output.run();
