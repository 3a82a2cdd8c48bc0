/**
 * One table of options (python/fsjob/cli_options.json) for the two command
 * lines: `fsjob` (the reference) and `python3 -m fsjob` (fsjob for Python,
 * whose parser is built from the table). Checked both ways: each command
 * line's --help lists exactly the table's options for it (a new option on
 * either side fails until the table says whether the other has it, and why
 * not), and both, given the same arguments, write the same spec record,
 * refuse the same mistakes with exit 2, and time out a wait with exit 75 and
 * the same advice. Units, FSJOB_QUEUE and --stdin are among the arguments.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { runFsjob, type CliRun } from '../support/cli.ts';
import { PYTHON, PYTHON_DIR, run } from './support.ts';
import { enqueue } from '../../src/producer/index.ts';
import { initQueue } from '../../src/model/queue.ts';
import { writeReceipt } from '../support/producer.ts';

interface Option {
  flags: string[];
  only?: 'node' | 'python';
}
interface Command {
  only?: 'node' | 'python';
  queue?: boolean;
  options?: Option[];
}
interface Table {
  global: Option[];
  commands: Record<string, Command>;
}

const TABLE = JSON.parse(readFileSync(join(PYTHON_DIR, 'fsjob', 'cli_options.json'), 'utf8')) as Table;
type Side = 'node' | 'python';
const WATCHDOG_MS = 120_000;

interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
}

function node(args: readonly string[], cwd: string, env: Record<string, string> = {}): Promise<CliRun> {
  return runFsjob(args, { cwd, env });
}

function py(args: readonly string[], cwd: string, env: Record<string, string> = {}): Promise<Ran> {
  return run(PYTHON, ['-S', '-m', 'fsjob', ...args], { cwd, env: { ...process.env, FSJOB_QUEUE: '', ...env, PYTHONPATH: PYTHON_DIR }, watchdogMs: WATCHDOG_MS });
}

function sides(args: readonly string[], cwd: string, env: Record<string, string> = {}): Promise<[Ran, Ran]> {
  return Promise.all([node(args, cwd, env), py(args, cwd, env)]);
}

const has = (entry: { only?: Side }, side: Side): boolean => entry.only === undefined || entry.only === side;

/** The long options (and their one-letter aliases) a --help text lists, without --help and --version. */
function listedOptions(help: string): string[] {
  const section = help.slice(Math.max(0, help.search(/^(Options|options):/m)));
  const names = new Set<string>();
  for (const line of section.split('\n')) {
    for (const match of line.matchAll(/(?:^|[\s,])(--?[a-z][a-z-]*)\b/g)) {
      const flag = match[1] as string;
      // Only the option column: a line that starts with blanks and a dash.
      if (!/^\s+-/.test(line)) continue;
      if (line.indexOf(flag) > line.search(/\S\s{2,}\S/) + 1 && line.search(/\S\s{2,}\S/) > 0) continue;
      names.add(flag);
    }
  }
  for (const builtIn of ['--help', '-h', '--version']) names.delete(builtIn);
  return [...names].sort();
}

function expectedOptions(name: string, side: Side): string[] {
  const command = TABLE.commands[name] as Command;
  const options = [...(command.queue === false ? [] : TABLE.global), ...(command.options ?? [])].filter((option) => has(option, side));
  return options.flatMap((option) => option.flags).sort();
}

const options = suite('the options of fsjob and python3 -m fsjob');
options.after(cleanupAll);

options('each command line has the commands and options the table gives it, and no other', async () => {
  const dir = await freshDir('fsjob-cli-table');
  const [nodeTop, pyTop] = await Promise.all([node(['--help'], dir), py(['--help'], dir)]);
  const commandSection = nodeTop.stdout.slice(nodeTop.stdout.indexOf('Commands:'), nodeTop.stdout.indexOf('\n\n', nodeTop.stdout.indexOf('Commands:')));
  const nodeCommands = [...commandSection.matchAll(/^ {2}fsjob ([a-z-]+)/gm)].map((match) => match[1]).sort();
  const pyCommands = (/\{([a-z,-]+)\}/.exec(pyTop.stdout)?.[1] ?? '').split(',').sort();
  const names = Object.keys(TABLE.commands);
  assert.equal(nodeCommands, names.filter((name) => has(TABLE.commands[name] as Command, 'node')).sort(), 'fsjob --help');
  assert.equal(pyCommands, names.filter((name) => has(TABLE.commands[name] as Command, 'python')).sort(), 'python3 -m fsjob --help');
  const checks = names.flatMap((name) =>
    (['node', 'python'] as const)
      .filter((side) => has(TABLE.commands[name] as Command, side) && (TABLE.commands[name] as Command).options !== undefined)
      .map(async (side) => {
        const help = await (side === 'node' ? node([name, '--help'], dir) : py([name, '--help'], dir));
        assert.is(help.status, 0, `${side} ${name} --help: ${help.stderr}`);
        return { side, name, listed: listedOptions(help.stdout), expected: expectedOptions(name, side) };
      }),
  );
  for (const { side, name, listed, expected } of await Promise.all(checks)) assert.equal(listed, expected, `${side}: ${name} --help against the table`);
});

options('the same arguments make the same spec record, with units, --stdin, --env NAME, --at and FSJOB_QUEUE', async () => {
  const dir = await freshDir('fsjob-cli-same');
  writeFileSync(join(dir, 'in'), 'the input\n');
  const queues = { node: join(dir, 'n'), python: join(dir, 'p') };
  const at = `@${Math.floor(Date.now() / 1000) + 3600}`;
  const args = ['--json', '--timeout', '10m', '--queue-deadline', '1h', '--max-attempts', '3', '--retry-delay', '30s', '--lane', 'l', '--dedupe', 'd', '--priority=-5', '--stdin', 'in', '--env', 'A=1', '--env', 'FROM_SHELL', '--cwd', dir, '--label', 'k=v', '--max-output', '64k', '--output-keep', 'tail', '--at', at, '--kill-grace', '2s', '--preemptible'];
  const payload = ['--json', '--handler', 'resize', '--payload', '{"w":640}', '--delay', '0', '--max-attempts', '2'];
  const specs: Record<Side, unknown[]> = { node: [], python: [] };
  for (const side of ['node', 'python'] as const) {
    const env = { FSJOB_QUEUE: queues[side], FROM_SHELL: 'shell value' };
    const cli = side === 'node' ? node : py;
    const init = await cli(['init'], dir, env);
    assert.is(init.status, 0, init.stderr);
    assert.is(init.stdout, `created queue ${queues[side]}\n`);
    for (const given of [[...args, '--', 'sh', '-c', 'cat'], payload]) {
      const made = await cli(['enqueue', ...given], dir, env);
      assert.is(made.status, 0, `${side}: ${made.stderr}`);
      const spec = JSON.parse(made.stdout) as Record<string, unknown>;
      assert.is(readFileSync(join(queues[side], 'jobs', spec['id'] as string, 'spec.json'), 'utf8'), made.stdout, `${side} printed the spec it wrote`);
      const { id: _id, created_ms: _created, producer: _producer, ...rest } = spec;
      specs[side].push(rest);
    }
  }
  assert.equal(specs.python, specs.node);
  const command = specs.node[0] as Record<string, unknown>;
  assert.equal([command['timeout_ms'], command['max_output_bytes'], command['env'], command['cwd']], [600_000, 65_536, { A: '1', FROM_SHELL: 'shell value' }, dir]);
});

options('both refuse the same mistakes with exit 2 and write nothing', async () => {
  const dir = await freshDir('fsjob-cli-refuse');
  const queue = join(dir, 'q');
  assert.is((await node(['init', '-q', queue], dir)).status, 0);
  const mistakes = [
    ['--timeout', '10x'],
    ['--timeout', '8d'],
    ['--max-output', '64q'],
    ['--env', 'FSJOB_TEST_UNSET_NAME'],
    ['--at', 'yesterday'],
    // No value, or an empty one (a shell variable that was empty): never the default nor the current directory in its place.
    ['--priority'],
    ['--priority='],
    ['--cwd', ''],
  ];
  const runs = await Promise.all(mistakes.map((mistake) => sides(['enqueue', '-q', queue, ...mistake, '--', 'true'], dir)));
  runs.forEach(([n, p], index) => {
    const what = (mistakes[index] as string[]).join(' ');
    assert.is(n.status, 2, `fsjob enqueue ${what}: ${n.stderr}`);
    assert.is(p.status, 2, `python3 -m fsjob enqueue ${what}: ${p.stderr}`);
    const flag = ((mistakes[index] as string[])[0] as string).replace(/=.*/, '');
    for (const ran of [n, p]) assert.match(ran.stderr, flag, `the message names ${flag}`);
  });
  assert.equal(readFileSync(join(queue, 'fsjob.json')).length > 0, true);
  const jobs = await node(['status', '-q', queue, '--json'], dir);
  assert.is((JSON.parse(jobs.stdout) as { jobs: unknown[] }).jobs.length, 0, 'nothing was enqueued');
});

options('under --json both print a refusal as one JSON object on stdout, with the same code and exit status', async () => {
  const dir = await freshDir('fsjob-cli-json-error');
  const queue = join(dir, 'q');
  assert.is((await node(['init', '-q', queue], dir)).status, 0);
  const cases: [string[], string, number][] = [
    [['enqueue', '-q', join(dir, 'missing'), '--json', '--', 'true'], 'NOT_A_QUEUE', 1],
    [['enqueue', '-q', queue, '--json', '--timeout', '8d', '--', 'true'], 'USAGE', 2],
    [['enqueue', '-q', queue, '--json', '--priority', '--', 'true'], 'USAGE', 2],
  ];
  for (const [args, code, exit] of cases) {
    const [n, p] = await sides(args, dir);
    for (const [side, ran] of [['fsjob', n], ['python3 -m fsjob', p]] as const) {
      assert.is(ran.status, exit, `${side} ${args.join(' ')}: ${ran.stderr}`);
      const error = (JSON.parse(ran.stdout) as { error: { code: string; exit_status: number } }).error;
      assert.equal([error.code, error.exit_status], [code, exit], `${side} ${args.join(' ')}`);
    }
  }
  const jobs = await node(['status', '-q', queue, '--json'], dir);
  assert.is((JSON.parse(jobs.stdout) as { jobs: unknown[] }).jobs.length, 0, 'nothing was enqueued');
});

options('a wait that times out exits 75 on both, saying that no live worker serves the queue', async () => {
  const dir = await freshDir('fsjob-cli-wait');
  const queue = join(dir, 'q');
  assert.is((await node(['init', '-q', queue], dir)).status, 0);
  const id = (await node(['enqueue', '-q', queue, '--', 'true'], dir)).stdout.trim();
  const [n, p] = await sides(['wait', '-q', queue, '--timeout', '2s', id], dir);
  for (const [side, ran] of [['fsjob', n], ['python3 -m fsjob', p]] as const) {
    assert.is(ran.status, 75, `${side}: ${ran.stderr}`);
    assert.match(ran.stderr, `no live worker serves ${queue}`, side);
  }
});

options('wait on many and status columns answer alike: the same receipts and exit status, the same order by --sort and --label', async () => {
  const dir = await freshDir('fsjob-cli-many');
  const root = join(dir, 'q');
  const queue = await initQueue(root);
  const a = await enqueue(queue, { argv: ['true'], priority: 2, labels: { batch: '1' } });
  const b = await enqueue(queue, { argv: ['true'], priority: 5, labels: { batch: '1' } });
  const c = await enqueue(queue, { argv: ['true'] });
  await writeReceipt(queue, a.id, { started_ms: 1_000, finished_ms: 4_000 });
  await writeReceipt(queue, b.id, { outcome: 'failed', exit_code: 3, status: { exit: 3, signal: null }, started_ms: 1_000, finished_ms: 2_000 });
  const q = ['-q', root];
  const runs = await Promise.all([
    sides(['wait', ...q, '--json', b.id, a.id], dir),
    sides(['wait', ...q, '--label', 'batch=1'], dir),
    sides(['wait', ...q, '--all', '--timeout', '1s'], dir),
    sides(['status', ...q, '--json', '--sort', 'priority', '--label', 'batch=1'], dir),
    sides(['status', ...q, '--json', '--sort', 'duration'], dir),
  ]);
  const [many, none, late, byPriority, byDuration] = runs;
  for (const [side, ran] of [['fsjob', many[0]], ['python3 -m fsjob', many[1]]] as const) {
    assert.is(ran.status, 3, `${side}: ${ran.stderr}`);
    assert.equal(ran.stdout.trim().split('\n').map((line) => (JSON.parse(line) as { job_id: string }).job_id), [b.id, a.id], side);
  }
  for (const ran of none) assert.equal([ran.status, ran.stderr], [0, 'fsjob: no job to wait for (no unfinished job matches)\n']);
  for (const ran of late) assert.is(ran.status, 75, ran.stderr);
  const order = (ran: Ran): [string, number | null][] =>
    (JSON.parse(ran.stdout) as { jobs: { id?: string; job_id?: string; duration_ms: number | null }[] }).jobs.map((job) => [job.id ?? job.job_id ?? '?', job.duration_ms]);
  for (const ran of byPriority) assert.equal(order(ran), [[b.id, 1_000], [a.id, 3_000]]);
  for (const ran of byDuration) assert.equal(order(ran), [[a.id, 3_000], [b.id, 1_000], [c.id, null]]);
});

options.run();
