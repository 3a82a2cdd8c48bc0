/**
 * fsjob-sh's command line beside the reference's: the exit statuses of
 * src/cli/exit.ts for the same situations (--help 0, a usage error or an
 * invalid request 2, no such job 4), empty arguments and unknown options
 * refused before anything is written, `wait` on a held job, which lives
 * in jobs/<id>.gated/ until it is released (HOLD-1), and `wait`'s line.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { FSJOB_BIN } from '../support/cli.ts';
import { runSh as sh, SH_WATCHDOG_MS as WATCHDOG_MS, shTestDirs } from '../support/fsjob-sh.ts';

const cli = suite('fsjob-sh: exit statuses and refusals as the reference');
const dir = shTestDirs(cli, 'fsjob-sh-cli');
const UNKNOWN = '1796126604134694430-d26ea0712362ddd0';

function fsjob(...args: string[]): number | null {
  return spawnSync(process.execPath, [FSJOB_BIN, ...args], { encoding: 'utf8', timeout: WATCHDOG_MS }).status;
}

function request(name: string, value: unknown): string {
  const file = path.join(dir(), `${name}.json`);
  writeFileSync(file, typeof value === 'string' ? value : `${JSON.stringify(value)}\n`);
  return file;
}

const jobsOf = (queue: string): string[] => readdirSync(path.join(queue, 'jobs'));

cli('--help exits 0 with the synopsis on stdout, as fsjob --help; --version exits 0', () => {
  for (const args of [['--help'], ['-h'], ['help'], ['wait', '--help']]) {
    const ran = sh(...args);
    assert.is(ran.status, 0, `fsjob-sh ${args.join(' ')}: ${ran.stderr}`);
    assert.match(ran.stdout, /fsjob-sh wait QUEUE ID/);
  }
  assert.is(fsjob('--help'), 0);
  assert.is(fsjob('wait', '--help'), 0);
  const version = sh('--version');
  assert.equal([version.status, version.stdout.trim() !== ''], [0, true], 'fsjob-sh --version, as fsjob --version');
});

cli('usage errors exit 2 and write nothing: no subcommand, an unknown one, an unknown option, an empty argument, a missing one', () => {
  const queue = path.join(dir(), 'q');
  const missing = path.join(dir(), 'never');
  assert.is(sh('init', queue).status, 0);
  const ok = request('ok', { argv: ['true'], cwd: dir() });
  for (const args of [[], ['bogus'], ['consume', '--bogus'], ['init', ''], ['init', missing, '--force'], ['produce', '', ok], ['produce', queue], ['wait', queue, UNKNOWN, '']]) {
    const ran = sh(...args);
    assert.is(ran.status, 2, `fsjob-sh ${args.join(' ')}: ${ran.stderr}`);
  }
  assert.is(existsSync(missing), false, 'init with an unknown option made nothing');
  assert.equal(jobsOf(queue), [], 'nothing was enqueued');
  // The reference, for the same mistakes.
  assert.is(fsjob('status', '--bogus', '-q', queue), 2);
  assert.is(fsjob('init', '-q', ''), 2);
});

cli('an invalid or unreadable request exits 2 (the reference: usage or invalid request), a missing dependency 4, and nothing is enqueued', () => {
  const queue = path.join(dir(), 'q');
  assert.is(sh('init', queue).status, 0);
  const invalid = [request('empty-argv', { argv: [] }), request('not-json', 'not json\n'), path.join(dir(), 'absent.json')];
  for (const file of invalid) {
    assert.is(sh('produce', queue, file).status, 2, `fsjob-sh produce ${file}`);
    assert.is(fsjob('enqueue', '-q', queue, '--request', file), 2, `fsjob enqueue --request ${file}`);
  }
  const after = request('after', { argv: ['true'], after: [{ job_id: UNKNOWN, when: 'succeeded' }] });
  assert.is(sh('produce', queue, after).status, 4);
  assert.is(fsjob('enqueue', '-q', queue, '--request', after), 4);
  assert.equal(jobsOf(queue), [], 'nothing was enqueued');
});

cli('no such job exits 4 for cancel, cancel-force, release and wait; an id that is not one exits 2', () => {
  const queue = path.join(dir(), 'q');
  assert.is(sh('init', queue).status, 0);
  for (const command of ['cancel', 'cancel-force', 'release', 'wait']) {
    assert.is(sh(command, queue, UNKNOWN).status, 4, `fsjob-sh ${command} of an unknown id`);
    assert.is(sh(command, queue, '../jobs').status, 2, `fsjob-sh ${command} of a non-id`);
  }
  for (const command of ['cancel', 'release', 'wait']) {
    assert.is(fsjob(command, '-q', queue, UNKNOWN), 4, `fsjob ${command} of an unknown id`);
    assert.is(fsjob(command, '-q', queue, '../jobs'), 2, `fsjob ${command} of a non-id`);
  }
});

cli('wait follows a held job in jobs/<id>.gated/ until it is released and finished', () => {
  const queue = path.join(dir(), 'q');
  assert.is(sh('init', queue).status, 0);
  const id = sh('produce', queue, request('held', { argv: ['sh', '-c', 'exit 5'], cwd: dir(), hold: true })).stdout.trim();
  assert.ok(existsSync(path.join(queue, 'jobs', `${id}.gated`)), 'the held job is gated');
  assert.is(sh('wait', queue, id, '0').status, 75, 'held: not finished, not missing');
  assert.is(sh('release', queue, id).status, 0);
  assert.is(sh('consume', queue).status, 0);
  assert.is(sh('wait', queue, id, '5').status, 5);
});

cli('wait prints the line fsjob wait prints, the receipt\'s message included', () => {
  const queue = path.join(dir(), 'q');
  assert.is(sh('init', queue).status, 0);
  const rejected = sh('produce', queue, request('gone', { argv: ['true'], cwd: path.join(dir(), 'gone') })).stdout.trim();
  const failed = sh('produce', queue, request('fails', { argv: ['sh', '-c', 'exit 3'], cwd: dir() })).stdout.trim();
  assert.is(sh('consume', queue).status, 0);
  for (const [id, status] of [[rejected, 126], [failed, 3]] as const) {
    const ours = sh('wait', queue, id);
    const reference = spawnSync(process.execPath, [FSJOB_BIN, 'wait', '-q', queue, id], { encoding: 'utf8', timeout: WATCHDOG_MS });
    assert.equal([ours.status, ours.stdout], [status, reference.stdout], `fsjob-sh wait ${id}`);
  }
});

cli.run();
