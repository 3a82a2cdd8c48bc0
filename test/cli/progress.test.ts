/**
 * Progress on long work (issue 29 point 4): validate, recover, gc, enqueue
 * --batch, status --exact and conformance draw a line in place on standard
 * error when it is a terminal (a pseudo-terminal here), and none when it is
 * a pipe, nor with --json or --quiet. The line waits a second of work
 * before it shows; FSJOB_PROGRESS_AFTER_MS=0 makes it show at once, so the
 * short work of a test shows it (the delay itself is a number in
 * src/cli/progress.ts, not a behaviour to time). Also: gc says one line,
 * not one per job, unless --verbose; the worker's log lines start with the
 * time unless --log-time none.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { FSJOB_ARGV } from '../support/cli.ts';
import { NO_PTY, runOnTerminal } from '../support/pty.ts';

/** Enough that the validator reports (every 64 jobs). */
const JOBS = 70;
/** One line drawn in place: a carriage return, erase to the end of the line, then what, the count and the rate. */
const LINE = (what: string): RegExp => new RegExp(`\\r\\x1b\\[K${what}: [0-9,]+ (of [0-9,]+ )?[a-z]+, [0-9,]+/s`);

let work: string;
let queue: string;
/** A queue of two jobs that a worker runs: what gc removes. */
let small: string;
let batch: string;
const env = (): NodeJS.ProcessEnv => ({ ...process.env, FSJOB_QUEUE: '', FSJOB_PROGRESS_AFTER_MS: '0' });

function inPipe(args: readonly string[]): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(FSJOB_ARGV[0] as string, [...FSJOB_ARGV.slice(1), ...args], { encoding: 'utf8', env: env(), timeout: 180_000 });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

function onTerminal(args: readonly string[]): { status: number; stdout: string; terminal: string } {
  return runOnTerminal([...FSJOB_ARGV, ...args], env());
}

const progress = suite('progress on a terminal, not in a pipe');

progress.before(async () => {
  work = await mkdtemp(join(tmpdir(), 'fsjob-progress-'));
  queue = join(work, 'q');
  batch = join(work, 'batch.jsonl');
  await writeFile(batch, Array.from({ length: JOBS }, () => '{"argv":["true"]}\n').join(''));
  assert.is(inPipe(['init', '--queue', queue]).status, 0);
  small = join(work, 'small');
  assert.is(inPipe(['init', '--queue', small]).status, 0);
  for (let i = 0; i < 2; i++) assert.is(inPipe(['enqueue', '--queue', small, '--', 'true']).status, 0);
});

progress.after(async () => {
  await rm(work, { recursive: true, force: true });
});

/** The command shows its line on a terminal and no line in a pipe; both runs succeed. */
function shows(what: string, args: readonly string[]): void {
  const terminal = onTerminal(args);
  assert.is(terminal.status, 0, terminal.terminal);
  assert.match(terminal.terminal, LINE(what), `${args.join(' ')} on a terminal: ${JSON.stringify(terminal.terminal.slice(0, 300))}`);
  assert.ok(terminal.terminal.endsWith('\r\x1b[K') || !terminal.terminal.slice(terminal.terminal.lastIndexOf('\x1b[K')).includes('/s'), 'the line is cleared at the end');
  const pipe = inPipe(args);
  assert.is(pipe.status, 0, pipe.stderr);
  assert.not.match(pipe.stderr, /\x1b\[K|\/s\b/, `${args.join(' ')} in a pipe: ${JSON.stringify(pipe.stderr.slice(0, 300))}`);
}

progress('enqueue --batch', () => {
  if (NO_PTY !== undefined) return void console.log(`skipped: ${NO_PTY}`);
  shows('enqueue --batch', ['enqueue', '--queue', queue, '--batch', batch]);
});

progress('status --exact (and none for a plain status)', () => {
  if (NO_PTY !== undefined) return void console.log(`skipped: ${NO_PTY}`);
  shows('status', ['status', '--queue', queue, '--exact']);
  assert.not.match(onTerminal(['status', '--queue', queue]).terminal, /\/s/, 'a plain status counts nothing');
});

progress('validate', () => {
  if (NO_PTY !== undefined) return void console.log(`skipped: ${NO_PTY}`);
  shows(`validate ${queue}`, ['validate', queue]);
});

progress('recover', () => {
  if (NO_PTY !== undefined) return void console.log(`skipped: ${NO_PTY}`);
  shows('recover', ['recover', '--queue', queue]);
});

progress('none with --json or --quiet, on a terminal too', () => {
  if (NO_PTY !== undefined) return void console.log(`skipped: ${NO_PTY}`);
  for (const args of [['status', '--queue', queue, '--exact', '--json'], ['validate', queue, '--quiet'], ['recover', '--queue', queue, '--quiet']]) {
    const run = onTerminal(args);
    assert.ok(run.status === 0 || run.status === 1, run.terminal);
    assert.not.match(run.terminal, /\x1b\[K/, args.join(' '));
  }
});

progress('worker log lines begin with the time, unless --log-time none', () => {
  const drained = inPipe(['work', '--queue', small, '--drain']);
  assert.is(drained.status, 0, drained.stderr);
  const lines = drained.stderr.split('\n').filter((line) => line.includes('fsjob work:'));
  assert.ok(lines.length > 0, drained.stderr);
  for (const line of lines) assert.match(line, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z fsjob work: /);
  const plain = inPipe(['work', '--queue', small, '--drain', '--log-time', 'none']);
  assert.is(plain.status, 0, plain.stderr);
  assert.match(plain.stderr, /^fsjob work: /m);
  assert.not.match(plain.stderr, /^\d{4}-/m);
});

progress('gc: its line on a terminal, one line of summary, and every job only with --verbose', () => {
  if (NO_PTY !== undefined) return void console.log(`skipped: ${NO_PTY}`);
  shows('gc: examining', ['gc', '--queue', queue, '--all']);
  const summary = inPipe(['gc', '--queue', small, '--all', '--dry-run']);
  assert.equal(summary.stdout.split('\n').filter((line) => line !== ''), ['would remove 2 finished jobs, 0 ready entries, 0 old holds, 0 stale temporaries; kept 0 finished jobs']);
  const verbose = inPipe(['gc', '--queue', small, '--all', '--verbose']);
  assert.is(verbose.stdout.split('\n').filter((line) => line.startsWith('removed job ')).length, 2, verbose.stdout);
});

progress('conformance', () => {
  if (NO_PTY !== undefined) return void console.log(`skipped: ${NO_PTY}`);
  shows('conformance', ['conformance', '--case', 'producer/spec-over-record-max']);
});

progress.run();
