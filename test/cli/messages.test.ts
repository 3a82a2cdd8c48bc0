/**
 * The messages a user trips on (issue 27 point 5), each with its code (from
 * --json) and its advice, and nothing left behind where the answer is no.
 */
import { chmod, mkdir, readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { runFsjob, type CliRun } from '../support/cli.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';

interface Refusal {
  code: string;
  message: string;
  field?: string;
  exit_status: number;
}

function refusalOf(run: CliRun): Refusal {
  return (JSON.parse(run.stdout) as { error: Refusal }).error;
}

async function setup(): Promise<{ dir: string; queue: string; run: (args: string[]) => Promise<CliRun> }> {
  const dir = await freshDir('messages');
  const queue = join(dir, 'q');
  const run = (args: string[]): Promise<CliRun> => runFsjob(args, { cwd: dir });
  const init = await run(['init', '--queue', queue]);
  assert.is(init.status, 0, init.stderr);
  return { dir, queue, run };
}

async function jobsIn(queue: string): Promise<string[]> {
  return (await readdir(join(queue, 'jobs'))).filter((name) => !name.startsWith('.'));
}

const messages = suite('messages: code and advice');
messages.after(cleanupAll);

messages('a directory others share (mode 1777, like /tmp) named as a queue: make a queue inside it, not chmod it', async () => {
  const { dir, run } = await setup();
  const shared = join(dir, 'shared');
  await mkdir(shared);
  await chmod(shared, 0o1777);
  const refused = await run(['status', '--queue', shared, '--json']);
  assert.is(refused.status, 1);
  const error = refusalOf(refused);
  assert.is(error.code, 'UNSAFE_QUEUE');
  assert.match(error.message, /make a queue of your own inside it \(fsjob init --queue \S+\/shared\/fsjob-queue\)/);
  assert.not.match(error.message, /chmod/);
  assert.match(refused.stderr, /inside it/);
});

messages('a queue of ours whose mode was widened: narrow it again', async () => {
  const { queue, run } = await setup();
  await chmod(queue, 0o770);
  const error = refusalOf(await run(['status', '--queue', queue, '--json']));
  assert.is(error.code, 'UNSAFE_QUEUE');
  assert.match(error.message, /run chmod 700 on it/);
});

messages('--delay 2 hours: the shell split the duration; refused, with the one-word and the quoted forms, and no job', async () => {
  const { queue, run } = await setup();
  const split = await run(['enqueue', '--queue', queue, '--json', '--delay', '2', 'hours', '--', 'true']);
  assert.is(split.status, 2, split.stderr);
  const error = refusalOf(split);
  assert.is(error.code, 'USAGE');
  assert.match(error.message, /--delay 2 hours: .*"hours" would be the job's command; write --delay 2h, or quote it: --delay "2 hours"/);
  assert.equal(await jobsIn(queue), [], 'nothing enqueued');
  const quoted = await run(['enqueue', '--queue', queue, '--json', '--delay', '2 hours', '--', 'true']);
  assert.is(quoted.status, 0, quoted.stderr);
  const spec = JSON.parse(quoted.stdout) as { argv: string[]; created_ms: number; not_before_ms: number };
  assert.equal(spec.argv, ['true']);
  assert.ok(Math.abs(spec.not_before_ms - spec.created_ms - 7_200_000) < 60_000, `not_before_ms is 2 hours after created_ms: ${spec.not_before_ms - spec.created_ms}`);
});

messages('enqueue ls -la: the options went to fsjob; put the command after --', async () => {
  const { queue, run } = await setup();
  const refused = await run(['enqueue', '--queue', queue, '--json', 'ls', '-la']);
  assert.is(refused.status, 2);
  const error = refusalOf(refused);
  assert.is(error.code, 'USAGE');
  assert.match(error.message, /-l, -a are not options of fsjob enqueue; .*put the command after --: fsjob enqueue \[options\] -- ls -la$/);
  assert.equal(await jobsIn(queue), []);
});

messages('an unknown option gets "did you mean"', async () => {
  const { queue, run } = await setup();
  const error = refusalOf(await run(['enqueue', '--queue', queue, '--json', '--max-attempt', '3', '--', 'true']));
  assert.is(error.code, 'USAGE');
  assert.match(error.message, /unknown option --max-attempt; did you mean --max-attempts\?/);
  const other = refusalOf(await run(['status', '--queue', queue, '--json', '--exct']));
  assert.match(other.message, /did you mean --exact\?/);
  const far = refusalOf(await run(['status', '--queue', queue, '--json', '--zzzzz']));
  assert.is(far.message, 'unknown option --zzzzz', 'no suggestion when nothing is close');
});

messages('work on a queue that does not exist says so before it says it serves', async () => {
  const { dir, run } = await setup();
  const typo = await run(['work', '--queue', join(dir, 'qq'), '--drain', '--json']);
  assert.is(typo.status, 1);
  assert.is(refusalOf(typo).code, 'NOT_A_QUEUE');
  assert.not.match(typo.stderr, /serving/);
});

messages('a refused member travels on the error as its field; the message names the flag that set it', async () => {
  const { queue, run } = await setup();
  const error = refusalOf(await run(['enqueue', '--queue', queue, '--json', '--env', '1A=x', '--', 'true']));
  assert.is(error.code, 'USAGE');
  assert.is(error.field, '/env/1A');
  assert.match(error.message, /^--env \(1A\): member name "1A" is not allowed/);
  const label = refusalOf(await run(['enqueue', '--queue', queue, '--json', '--label', `a=${'x'.repeat(300)}`, '--', 'true']));
  assert.is(label.field, '/labels/a');
  assert.match(label.message, /^--label \(a\): /);
  const bound = refusalOf(await run(['enqueue', '--queue', queue, '--json', '--kill-grace', '6m', '--', 'true']));
  assert.is(bound.message, '--kill-grace 6m is too large: at most 5m', 'the bound of section 5.2, in the flag\'s unit');
  assert.equal(await jobsIn(queue), []);
});


messages('a number option given a word: USAGE that names the option and never quotes the NaN yargs made of it', async () => {
  const { queue, run } = await setup();
  const refused = await run(['enqueue', '--queue', queue, '--priority', 'x', '--json', '--', 'true']);
  assert.is(refused.status, 2);
  const error = refusalOf(refused);
  assert.is(error.code, 'USAGE');
  assert.match(error.message, /--priority takes an integer/);
  assert.not.match(error.message, /NaN/);
  assert.equal(await jobsIn(queue), []);
});

messages('an option given no value (--priority -- cmd, --cwd before another option, --concurrency at the end) or an empty one (--priority=, --cwd ""): USAGE, exit 2, nothing enqueued or claimed', async () => {
  const { dir, queue, run } = await setup();
  const lines = [
    ['--priority', '--', 'true'],
    ['--max-attempts', '--', 'true'],
    ['--cwd', '--lane', 'x', '--', 'true'],
    ['--lane', 'x', '--lane-slots', '--', 'true'],
    ['--after', '--', 'true'],
    ['--priority=', '--', 'true'],
    ['--priority', '', '--', 'true'],
    ['--cwd', '', '--', 'true'],
  ];
  for (const line of lines) {
    const refused = await run(['enqueue', '--queue', queue, '--json', ...line]);
    assert.is(refused.status, 2, `enqueue ${line.join(' ')}: ${refused.stderr}`);
    assert.equal([refusalOf(refused).code, refusalOf(refused).exit_status], ['USAGE', 2], `enqueue ${line.join(' ')}`);
  }
  assert.equal(await jobsIn(queue), [], 'nothing enqueued');
  // -q "$QUEUE" with QUEUE empty: not $FSJOB_QUEUE's queue (nor the default, nor the current directory) in its place.
  for (const args of [['enqueue', '-q', '', '--json', '--', 'true'], ['enqueue', '--queue=', '--json', '--', 'true'], ['status', '-q', '', '--json']]) {
    const refused = await runFsjob(args, { cwd: dir, env: { FSJOB_QUEUE: queue } });
    assert.equal([refused.status, refusalOf(refused).code], [2, 'USAGE'], `fsjob ${args.join(' ')}: ${refused.stderr}`);
  }
  assert.equal(await jobsIn(queue), [], 'nothing enqueued in $FSJOB_QUEUE');
  // A negative number is a value, not an option.
  const negative = await run(['enqueue', '--queue', queue, '--json', '--priority', '-5', '--', 'true']);
  assert.is(negative.status, 0, negative.stderr);
  const id = (JSON.parse(negative.stdout) as { id: string }).id;
  assert.is((JSON.parse(await readFile(join(queue, 'jobs', id, 'spec.json'), 'utf8')) as { priority: number }).priority, -5);
  for (const line of [['--concurrency'], ['--concurrency='], ['--lease']]) {
    const refused = await run(['work', '--queue', queue, '--drain', '--json', ...line]);
    assert.is(refused.status, 2, `work ${line.join(' ')}: ${refused.stderr}`);
    assert.is(refusalOf(refused).code, 'USAGE');
  }
  assert.equal(await readdir(join(queue, 'jobs', id)), ['spec.json'], 'no worker claimed the job');
});

messages('validate --json of a --queue it cannot audit: the error as JSON on stdout, exit 2', async () => {
  const { dir, run } = await setup();
  for (const args of [['--queue', join(dir, 'missing')], [join(dir, 'missing')]]) {
    const refused = await run(['validate', ...args, '--json']);
    assert.is(refused.status, 2, refused.stderr);
    const error = refusalOf(refused);
    assert.equal([typeof error.code, error.exit_status], ['string', 2], `validate ${args.join(' ')} --json`);
  }
  assert.is(refusalOf(await run(['validate', '--queue', join(dir, 'missing'), '--json'])).code, 'NOT_A_QUEUE');
});

messages('fsjob help and fsjob status help print what --help prints, laid out in the same columns', async () => {
  const { run } = await setup();
  for (const [word, flag] of [[['help'], ['--help']], [['status', 'help'], ['status', '--help']]]) {
    const [asked, flagged] = [await run(word as string[]), await run(flag as string[])];
    assert.equal([asked.status, asked.stdout], [0, flagged.stdout], `fsjob ${(word as string[]).join(' ')}`);
  }
});

messages.run();
