/**
 * Hostile input handed to `fsjob enqueue` (issue 19 points 4 and 7): a
 * directory, /proc/self/mem, a FIFO and an endless device as --stdin,
 * --request or --batch; requests over REQUEST_MAX, a stdin over STDIN_MAX, a
 * request of another major; and a job whose own stdin entry is a directory or
 * a FIFO. Each gets a clear error and the exit status of the CLI contract (2
 * for an invalid request or option, 1 for a failure), never a stack trace,
 * and leaves nothing in the queue (ENQ-6).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cleanupAll, freshDir, mkfifo } from '../support/helpers.ts';
import { assertNoCrash, FSJOB_ARGV, type CliRun } from '../support/faults.ts';

const STDIN_MAX = 67_108_864;
const REQUEST_MAX = 100_663_296;

interface Setup {
  root: string;
  dir: string;
}

async function setup(): Promise<Setup> {
  const dir = await freshDir('fsjob-input');
  const root = join(dir, 'q');
  const made = await fsjob(['init', '--queue', root], dir);
  assert.is(made.status, 0, made.stderr);
  return { root, dir };
}

/** Runs `fsjob <args>` (asynchronously, so a FIFO writer can run beside it), with a watchdog. */
async function fsjob(args: string[], cwd: string): Promise<CliRun> {
  const child = spawn(FSJOB_ARGV[0] as string, [...FSJOB_ARGV.slice(1), ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const watchdog = setTimeout(() => child.kill('SIGKILL'), 120_000);
  const [status, signal] = (await once(child, 'close')) as [number | null, NodeJS.Signals | null];
  clearTimeout(watchdog);
  return { status, signal, stdout, stderr };
}

/** A FIFO in `dir` fed by `script` (sh, $1 = the FIFO) once a reader opens it; `written` settles when the writer is done (killed by SIGPIPE is fine). */
function feedFifo(dir: string, name: string, script: string): { path: string; written: Promise<unknown> } {
  const path = join(dir, name);
  mkfifo(path);
  const writer = spawn('sh', ['-c', script, 'feed', path], { stdio: 'ignore' });
  return { path, written: once(writer, 'close') };
}

function assertRefused(run: CliRun, status: number, what: string, setupOf: Setup, pattern: RegExp): void {
  assertNoCrash(run, what);
  assert.is(run.status, status, `${what}: exit ${String(run.status)}: ${run.stderr}`);
  assert.match(run.stderr, pattern, `${what}: the message says why`);
  assert.equal(readdirSync(join(setupOf.root, 'jobs')), [], `${what}: no job was published`);
  assert.equal(readdirSync(join(setupOf.root, 'tmp')), [], `${what}: nothing was left staged (ENQ-6)`);
}

const stdinFlag = suite('hostile input: enqueue --stdin');
stdinFlag.after(cleanupAll);

stdinFlag('a directory is a usage error (exit 2) naming it', async () => {
  const s = await setup();
  assertRefused(await fsjob(['enqueue', '--queue', s.root, '--stdin', s.dir, '--', 'cat'], s.dir), 2, '--stdin DIR', s, /is a directory/);
});

stdinFlag('/proc/self/mem is an IO error (exit 1) naming the file and EIO', async () => {
  const s = await setup();
  assertRefused(await fsjob(['enqueue', '--queue', s.root, '--stdin', '/proc/self/mem', '--', 'cat'], s.dir), 1, '--stdin /proc/self/mem', s, /\/proc\/self\/mem.*EIO/);
});

stdinFlag('an endless device is refused at STDIN_MAX (exit 2), never truncated', async () => {
  const s = await setup();
  assertRefused(await fsjob(['enqueue', '--queue', s.root, '--stdin', '/dev/zero', '--', 'cat'], s.dir), 2, '--stdin /dev/zero', s, /67108864 bytes/);
});

stdinFlag('a FIFO is read to its end like a pipe: the job gets exactly what the writer wrote', async () => {
  const s = await setup();
  const fifo = feedFifo(s.dir, 'in.fifo', 'printf "from a fifo\\n" > "$1"');
  const run = await fsjob(['enqueue', '--queue', s.root, '--stdin', fifo.path, '--', 'cat'], s.dir);
  await fifo.written;
  assertNoCrash(run, '--stdin FIFO');
  assert.is(run.status, 0, run.stderr);
  assert.is(readFileSync(join(s.root, 'jobs', run.stdout.trim(), 'stdin'), 'utf8'), 'from a fifo\n');
});

stdinFlag('a FIFO whose writer sends more than STDIN_MAX is refused (exit 2) with nothing left', async () => {
  const s = await setup();
  const fifo = feedFifo(s.dir, 'big.fifo', `head -c ${STDIN_MAX + 1} /dev/zero > "$1"`);
  const run = await fsjob(['enqueue', '--queue', s.root, '--stdin', fifo.path, '--', 'cat'], s.dir);
  await fifo.written;
  assertRefused(run, 2, '--stdin FIFO over STDIN_MAX', s, /67108864 bytes/);
});

const requests = suite('hostile input: enqueue --request and --batch');
requests.after(cleanupAll);

requests('a directory as --request or --batch is a usage error (exit 2)', async () => {
  const s = await setup();
  assertRefused(await fsjob(['enqueue', '--queue', s.root, '--request', s.dir], s.dir), 2, '--request DIR', s, /is a directory/);
  assertRefused(await fsjob(['enqueue', '--queue', s.root, '--batch', s.dir], s.dir), 2, '--batch DIR', s, /is a directory/);
});

requests('/proc/self/mem as --request or --batch is an IO error (exit 1)', async () => {
  const s = await setup();
  assertRefused(await fsjob(['enqueue', '--queue', s.root, '--request', '/proc/self/mem'], s.dir), 1, '--request /proc/self/mem', s, /EIO/);
  assertRefused(await fsjob(['enqueue', '--queue', s.root, '--batch', '/proc/self/mem'], s.dir), 1, '--batch /proc/self/mem', s, /EIO/);
});

requests('a request over REQUEST_MAX exits 2 (invalid request, REQ-1)', async () => {
  const s = await setup();
  // Streamed through a FIFO: the 96 MiB never touch the disk, and the reader stops at the bound.
  const fifo = feedFifo(s.dir, 'big-request.fifo', `{ printf '{"argv":["cat"],"stdin_base64":"'; head -c ${REQUEST_MAX} /dev/zero | tr '\\0' A; printf '"}'; } > "$1"`);
  const run = await fsjob(['enqueue', '--queue', s.root, '--request', fifo.path], s.dir);
  await fifo.written;
  assertRefused(run, 2, 'a request over REQUEST_MAX', s, /100663296 bytes/);
});

requests('a request whose stdin_base64 decodes to more than STDIN_MAX exits 2 (REQ-1)', async () => {
  const s = await setup();
  // 4 base64 characters per 3 bytes: STDIN_MAX + 2 bytes (a multiple of 3), under REQUEST_MAX as text.
  const chars = ((STDIN_MAX + 2) / 3) * 4;
  const fifo = feedFifo(s.dir, 'big-stdin.fifo', `{ printf '{"argv":["cat"],"stdin_base64":"'; head -c ${chars} /dev/zero | tr '\\0' A; printf '"}'; } > "$1"`);
  const run = await fsjob(['enqueue', '--queue', s.root, '--request', fifo.path], s.dir);
  await fifo.written;
  assertRefused(run, 2, 'a request with a stdin over STDIN_MAX', s, /STDIN_MAX/);
});

requests('a request whose stdin_base64 decodes to exactly STDIN_MAX is accepted (the schema\'s base64 pattern is checked without overflowing the regexp stack)', async () => {
  const s = await setup();
  const chars = Math.ceil(STDIN_MAX / 3) * 4 - 4;
  // 64 MiB = 3 * 22369621 + 1 bytes: full groups of "AAAA" (3 zero bytes each), then "AA==" for the last byte.
  const fifo = feedFifo(s.dir, 'max-stdin.fifo', `{ printf '{"argv":["cat"],"stdin_base64":"'; head -c ${chars} /dev/zero | tr '\\0' A; printf 'AA=="}'; } > "$1"`);
  const run = await fsjob(['enqueue', '--queue', s.root, '--request', fifo.path], s.dir);
  await fifo.written;
  assertNoCrash(run, 'a request with a stdin of STDIN_MAX');
  assert.is(run.status, 0, run.stderr);
  const spec = JSON.parse(readFileSync(join(s.root, 'jobs', run.stdout.trim(), 'spec.json'), 'utf8')) as { stdin: { bytes: number } };
  assert.is(spec.stdin.bytes, STDIN_MAX);
});

requests('a request of another major exits 2 (invalid request, VER-1)', async () => {
  const s = await setup();
  const file = join(s.dir, 'v2.json');
  writeFileSync(file, '{"fsjob":"2.0","argv":["echo"]}\n');
  assertRefused(await fsjob(['enqueue', '--queue', s.root, '--request', file], s.dir), 2, 'a request of fsjob 2.0', s, /major 2/);
});

const entries = suite('hostile input: a job whose stdin entry is not a file');
entries.after(cleanupAll);

for (const kind of ['directory', 'FIFO'] as const) {
  entries(`a stdin entry that is a ${kind} is reported by validate and status and rejected by work (stdin_unusable), never opened blocking`, async () => {
    const s = await setup();
    const input = join(s.dir, 'input.txt');
    writeFileSync(input, 'data\n');
    const id = (await fsjob(['enqueue', '--queue', s.root, '--stdin', input, '--', 'cat'], s.dir)).stdout.trim();
    const entry = join(s.root, 'jobs', id, 'stdin');
    rmSync(entry);
    if (kind === 'directory') mkdirSync(entry, { mode: 0o700 });
    else mkfifo(entry);
    const audit = await fsjob(['validate', '--json', s.root], s.dir);
    assertNoCrash(audit, 'validate');
    assert.is(audit.status, 1);
    const codes = (JSON.parse(audit.stdout) as { findings: { code: string; path: string }[] }).findings.filter((f) => f.path === entry).map((f) => f.code);
    assert.equal(codes, ['ENTRY_WRONG_TYPE'], 'validate names the entry');
    const status = await fsjob(['status', '--queue', s.root, id], s.dir);
    assertNoCrash(status, 'status');
    assert.is(status.status, 0, status.stderr);
    const work = await fsjob(['work', '--queue', s.root, '--drain'], s.dir);
    assertNoCrash(work, 'work');
    assert.is(work.status, 0, work.stderr);
    const receipt = JSON.parse(readFileSync(join(s.root, 'jobs', id, 'receipt.json'), 'utf8')) as { outcome: string; reason: string; attempts: number };
    assert.equal([receipt.outcome, receipt.reason, receipt.attempts], ['rejected', 'stdin_unusable', 0], 'rejected before anything ran (EXEC-7)');
  });
}

stdinFlag.run();
requests.run();
entries.run();
