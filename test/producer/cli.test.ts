import { spawn } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enqueue } from '../../src/producer/index.ts';
import { initQueue, openQueue, type Queue } from '../../src/model/queue.ts';
import { checkRecord, type ReceiptRecord, type SpecRecord } from '../../src/records/codec.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { entries, writeClaim, writeOutput, writeReceipt } from '../support/producer.ts';
import { FSJOB_BIN } from '../support/cli.ts';

const BIN = FSJOB_BIN;
// Generous: other suites may load the machine; a healthy run takes about a second.
const WATCHDOG_MS = 90_000;

interface Run {
  status: number;
  stdout: string;
  stderr: string;
  bytes: Buffer;
}

/** Runs `node bin/fsjob.js ...args`; each run is a whole node process (~0.7 s), so tests start independent runs together. */
function fsjob(args: string[], options: { cwd: string; input?: string; env?: Record<string, string> }): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: options.cwd, env: { ...process.env, FSJOB_QUEUE: '', ...options.env }, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`fsjob ${args.slice(0, 3).join(' ')} still running after ${WATCHDOG_MS} ms (watchdog)`));
    }, WATCHDOG_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      const bytes = Buffer.concat(out);
      resolve({ status: code ?? -1, stdout: bytes.toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), bytes });
    });
    child.stdin.end(options.input ?? '');
  });
}

async function setup(): Promise<{ dir: string; root: string; run: (args: string[], extra?: { input?: string; env?: Record<string, string> }) => Promise<Run> }> {
  const dir = await freshDir('fsjob-cli');
  const root = join(dir, 'q');
  return { dir, root, run: (args, extra = {}) => fsjob(args, { cwd: dir, ...extra }) };
}

const readSpec = async (queue: Queue, id: string): Promise<SpecRecord> => JSON.parse(await readFile(join(queue.paths.job(id), 'spec.json'), 'utf8')) as SpecRecord;

const cli = suite('fsjob producer commands, end to end');
cli.after(cleanupAll);

cli('init, enqueue with every option, --json, and status as a table, as JSON and for one job', async () => {
  const { dir, root, run } = await setup();
  const init = await run(['init', '--queue', root]);
  assert.equal([init.status, init.stdout], [0, `created queue ${root}\n`]);
  const again = await run(['init', '-q', root, '--json']);
  assert.is(again.status, 0);
  assert.is((JSON.parse(again.stdout) as { created: boolean }).created, false, 'init is idempotent (INIT-2)');
  const queue = await openQueue(root);
  await writeFile(join(dir, 'input.txt'), 'line\n');
  await mkdir(join(dir, 'sub'));
  const [full, plain, payload] = await Promise.all([
    run(['enqueue', '-q', root, '--json', '--timeout', '10m', '--queue-deadline', '1h', '--max-attempts', '3', '--retry-delay', '30s', '--lane', 'web', '--dedupe', 'd1',
      '--priority=-5', '--env', 'A=1', '--env', 'B=x=y', '--cwd', 'sub', '--label', 'team=web', '--max-output', '64k', '--kill-grace', '2.5', '--preemptible',
      '--stdin', 'input.txt', '--', 'sh', '-c', 'echo "$A" 007', '007']),
    run(['enqueue', '-q', root, '--', 'echo', 'hi']),
    run(['enqueue', '-q', root, '--handler', 'resize', '--payload', '{"w":640}']),
  ]);
  assert.is(full.status, 0, full.stderr);
  const spec = JSON.parse(full.stdout) as SpecRecord;
  assert.equal(spec, await readSpec(queue, spec.id), '--json prints the spec record as published');
  assert.equal(checkRecord('spec', Buffer.from(full.stdout), { expectedJobId: spec.id }), [], 'in compact form, one line (REC-1)');
  assert.equal(
    [spec.argv, spec.cwd, spec.env, spec.timeout_ms, spec.queue_deadline_ms, spec.max_attempts, spec.retry_delay_ms, spec.lane, spec.dedupe, spec.priority, spec.preemptible, spec.max_output_bytes, spec.kill_grace_ms, spec.labels, spec.stdin?.bytes],
    [['sh', '-c', 'echo "$A" 007', '007'], join(dir, 'sub'), { A: '1', B: 'x=y' }, 600_000, 3_600_000, 3, 30_000, 'web', 'd1', -5, true, 65_536, 2500, { team: 'web' }, 5],
  );
  assert.is(plain.status, 0, plain.stderr);
  assert.match(plain.stdout, /^[0-9]{19}-[0-9a-f]{16}\n$/, 'the id alone');
  const plainId = plain.stdout.trim();
  assert.equal([(await readSpec(queue, plainId)).argv, (await readSpec(queue, plainId)).cwd], [['echo', 'hi'], dir], 'cwd defaults to the current directory');
  assert.is(payload.status, 0, payload.stderr);
  const payloadSpec = await readSpec(queue, payload.stdout.trim());
  assert.equal([payloadSpec.handler, payloadSpec.payload, 'argv' in payloadSpec], ['resize', { w: 640 }, false]);

  await writeReceipt(queue, plainId, { outcome: 'failed', exit_code: 7, status: { exit: 7, signal: null } });
  const [table, json, one] = await Promise.all([run(['status', '-q', root]), run(['status', '-q', root, '--json']), run(['status', '-q', root, plainId, '--json'])]);
  assert.is(table.status, 0, table.stderr);
  const lines = table.stdout.split('\n');
  assert.is(lines[0], '3 jobs: 2 queued, 1 finished (1 failed)', 'counts by status and outcome first');
  assert.match(lines[2] ?? '', /^ID +STATUS +ATTEMPTS +LANE +PRI +AGE +STARTED +FINISHED +DURATION +RESULT +COMMAND$/);
  assert.ok(lines.some((line) => line.startsWith(plainId) && line.includes('finished') && line.includes('failed (exit 7)')), table.stdout);
  assert.ok(lines.some((line) => line.startsWith(spec.id) && / queued +0\/3 +web /.test(line)), table.stdout);
  assert.ok(table.stdout.includes('no workers registered'), table.stdout);
  assert.ok(lines.some((line) => line.startsWith(spec.id) && line.endsWith(`sh -c 'echo "$A" 007' 007`)), `the command shell-quoted: ${table.stdout}`);
  const listed = JSON.parse(json.stdout) as { jobs: { id: string; status: string }[]; total: number; workers: unknown[] };
  assert.equal([listed.total, listed.jobs.map((job) => job.status).sort(), listed.workers], [3, ['finished', 'queued', 'queued'], []]);
  const detail = JSON.parse(one.stdout) as { status: string; receipt: ReceiptRecord; attempts: number };
  assert.equal([detail.status, detail.receipt.exit_code], ['finished', 7]);
});

cli('dedupe exits 3; --request (the produce role) and --batch', async () => {
  const { dir, root, run } = await setup();
  const queue = await initQueue(root); // `fsjob init` itself is tested above
  const first = await run(['enqueue', '-q', root, '--dedupe', 'nightly', '--', 'report']);
  await writeFile(join(dir, 'request.json'), '{"argv":["make","all"],"priority":3}\n');
  await writeFile(join(dir, 'bad.json'), '{"argv":["make"],"timeout_ms":-1}\n');
  await writeFile(join(dir, 'batch.jsonl'), '{"argv":["a"]}\n{"argv":"not a list"}\n{"argv":["c"],"dedupe":"nightly"}\n{"argv":["d"]}\n');
  const [held, request, bad, batch, piped] = await Promise.all([
    run(['enqueue', '-q', root, '--dedupe', 'nightly', '--', 'report']),
    run(['enqueue', '-q', root, '--request', 'request.json']),
    run(['enqueue', '-q', root, '--request', 'bad.json']),
    run(['enqueue', '-q', root, '--batch', 'batch.jsonl']),
    run(['enqueue', '-q', root, '--batch', '-', '--json'], { input: '{"argv":["e"]}\n\n{"argv":["f"]}\n' }),
  ]);
  assert.is(first.status, 0);
  const holder = first.stdout.trim();
  assert.equal([held.status, held.stdout], [3, ''], 'exit 3 and no id (DEDUPE-1, MANIFEST-1)');
  assert.ok(held.stderr.includes(holder), 'the message names the holding job');
  assert.is(request.status, 0, request.stderr);
  assert.match(request.stdout, /^[0-9]{19}-[0-9a-f]{16}\n$/);
  assert.is((await readSpec(queue, request.stdout.trim())).priority, 3);
  assert.equal([bad.status, bad.stdout], [2, ''], 'an invalid request is a usage error');
  assert.ok(bad.stderr.includes('bad.json') && bad.stderr.includes('/timeout_ms'), bad.stderr);
  assert.is(batch.status, 1, 'a failed line makes the batch exit 1');
  assert.is(batch.stdout.trim().split('\n').length, 2, 'lines 1 and 4 accepted');
  assert.ok(batch.stderr.includes('line 2:') && batch.stderr.includes('line 3:'), batch.stderr);
  assert.is(piped.status, 0, piped.stderr);
  assert.equal(piped.stdout.trim().split('\n').map((line) => (JSON.parse(line) as { line: number }).line), [1, 3]);
  const jobs = await entries(queue.paths.dir('jobs'));
  assert.is(jobs.length, 1 + 1 + 2 + 2, 'nothing of the refused jobs was published');
  assert.equal(await entries(queue.paths.dir('tmp')), []);
});

cli('wait exits with the job exit code, 130 after cancel, 75 on its own timeout; cancel refuses a finished job', async () => {
  const { root, run } = await setup();
  const queue = await initQueue(root); // `fsjob init` itself is tested above
  const failed = await enqueue(queue, { argv: ['x'] });
  await writeReceipt(queue, failed.id, { outcome: 'failed', exit_code: 3, status: { exit: 3, signal: null } });
  const open = await enqueue(queue, { argv: ['x'] });
  const doomed = await enqueue(queue, { argv: ['x'] });
  const forced = await enqueue(queue, { argv: ['x'] });
  const [waitFailed, waitOpen, cancelled, force, unknown] = await Promise.all([
    run(['wait', '-q', root, failed.id]),
    run(['wait', '-q', root, open.id, '--timeout', '0.3']),
    run(['cancel', '-q', root, doomed.id, '--reason', 'not needed']),
    run(['cancel', '-q', root, forced.id, '--force', '--json']),
    run(['cancel', '-q', root, '1764476044123456789-3fa2c1d09b8e7f64']),
  ]);
  assert.is(waitFailed.status, 3, 'the job exit code');
  assert.ok(waitFailed.stdout.includes('failed'));
  assert.is(waitOpen.status, 75, 'wait timed out');
  assert.ok(waitOpen.stderr.includes('no receipt yet'), waitOpen.stderr);
  assert.is(cancelled.status, 0, cancelled.stderr);
  assert.is(force.status, 0, force.stderr);
  assert.is((JSON.parse(force.stdout) as { record: string }).record, 'cancel-force.json');
  assert.ok((await entries(queue.paths.job(forced.id))).includes('cancel-force.json'));
  assert.is(unknown.status, 4, 'no such job');
  const [waitCancelled, twice, badId] = await Promise.all([
    run(['wait', '-q', root, doomed.id, '--json']),
    run(['cancel', '-q', root, doomed.id]),
    run(['wait', '-q', root, 'not-an-id']),
  ]);
  assert.is(waitCancelled.status, 130);
  assert.is((JSON.parse(waitCancelled.stdout) as ReceiptRecord).outcome, 'cancelled');
  assert.is(twice.status, 1, 'a finished job cannot be cancelled');
  assert.ok(twice.stderr.includes('cancelled, exit code 130'), twice.stderr);
  assert.is(badId.status, 2);
});

cli('logs prints the output bytes exactly; gc removes only finished jobs', async () => {
  const { root, run } = await setup();
  const queue = await initQueue(root); // `fsjob init` itself is tested above
  const done = await enqueue(queue, { argv: ['x'] });
  const open = await enqueue(queue, { argv: ['x'] });
  await writeClaim(queue, done.id, 1);
  const binary = Buffer.from([0x68, 0x69, 0x0a, 0xff, 0x00, 0xfe]);
  await (await writeOutput(queue, done.id, 'stdout', 1, binary)).close();
  await (await writeOutput(queue, done.id, 'stderr', 1, 'warn\n')).close();
  await writeReceipt(queue, done.id);
  const [out, err, follow] = await Promise.all([
    run(['logs', '-q', root, done.id]),
    run(['logs', '-q', root, done.id, '--stderr']),
    run(['logs', '-q', root, done.id, '--follow']),
  ]);
  assert.equal([out.status, [...out.bytes]], [0, [...binary]], 'bytes, not text');
  assert.equal([err.status, err.stdout], [0, 'warn\n']);
  assert.equal([follow.status, [...follow.bytes]], [0, [...binary]], 'follow ends at once for a finished job');
  const [bare, dry, recent] = await Promise.all([run(['gc', '-q', root]), run(['gc', '-q', root, '--dry-run', '--all', '--json']), run(['gc', '-q', root, '--older-than', '7d'])]);
  assert.equal([bare.status, bare.stdout], [2, ''], 'gc without ids, --keep, --older-than or --all removes nothing and says why');
  assert.match(bare.stderr, /--all/);
  assert.equal((JSON.parse(dry.stdout) as { jobs: string[]; dry_run: boolean }).jobs, [done.id]);
  assert.ok(recent.stdout.includes('removed 0 finished jobs'), recent.stdout);
  assert.is((await entries(queue.paths.dir('jobs'))).length, 2);
  const removed = await run(['gc', '-q', root, '--keep', '0', '--verbose']);
  assert.is(removed.status, 0, removed.stderr);
  assert.ok(removed.stdout.includes(`removed job ${done.id}`), `--verbose lists each job: ${removed.stdout}`);
  assert.ok(removed.stdout.includes('removed 1 finished job,'), removed.stdout);
  assert.equal(await entries(queue.paths.dir('jobs')), [open.id], 'the unfinished job survives gc --keep 0');
});

cli('usage errors exit 2, a missing queue says how to create it, FSJOB_QUEUE names the queue, and --help documents exit codes', async () => {
  const { root, run } = await setup();
  await initQueue(root);
  const [noCommand, badDuration, missing, fromEnv, waitHelp, enqueueHelp] = await Promise.all([
    run(['enqueue', '-q', root]),
    run(['enqueue', '-q', root, '--timeout', 'soon', '--', 'x']),
    run(['status', '-q', `${root}-missing`]),
    run(['status', '--json'], { env: { FSJOB_QUEUE: root } }),
    run(['wait', '--help']),
    run(['enqueue', '--help']),
  ]);
  assert.is(noCommand.status, 2);
  assert.is(badDuration.status, 2);
  assert.ok(badDuration.stderr.includes('--timeout'), badDuration.stderr);
  assert.is(missing.status, 1);
  assert.ok(missing.stderr.includes('fsjob init'), missing.stderr);
  assert.is(fromEnv.status, 0, fromEnv.stderr);
  assert.is((JSON.parse(fromEnv.stdout) as { queue: string }).queue, root);
  for (const code of ['75', '124', '125', '126', '130', '137']) assert.ok(waitHelp.stdout.includes(code), `wait --help mentions ${code}`);
  assert.ok(waitHelp.stdout.includes('Examples:'));
  assert.ok(enqueueHelp.stdout.includes('Examples:') && enqueueHelp.stdout.includes('3 dedupe key held'), enqueueHelp.stdout);
  assert.equal(await entries(join(root, 'jobs')), []);
});

cli.run();
