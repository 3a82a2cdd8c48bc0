/**
 * `fsjob validate` on queues, end to end through bin/fsjob.js: a queue whose
 * jobs really ran audits clean with exit 0; `validate DIR` and `--queue DIR`
 * agree; exit 1 on errors (and on warnings with --strict), 2 when the audit
 * cannot run; the human report groups findings by job and ends with the
 * summary line; --json matches schemas/report.schema.json; a FIFO never
 * stalls it; and a run leaves the queue byte-for-byte and mode-for-mode
 * as it was.
 */
import { execFile } from 'node:child_process';
import { chmod, mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { main } from '../../src/cli/main.ts';
import { auditQueue } from '../../src/validator/queue.ts';
import type { ValidateReport } from '../../src/records/codec.ts';
import { schemaErrors } from '../../src/records/schemas.ts';
import type { Queue } from '../../src/model/queue.ts';
import { cleanupAll, freshDir, mkfifo } from '../support/helpers.ts';
import { cancel, claim, enqueue, exec, killChildren, liveGroup, newQueue, publishHold, registerWorker, runJob, snapshot } from '../support/validate-queue.ts';
import { FSJOB_BIN } from '../support/cli.ts';

const BIN = FSJOB_BIN;
// Generous: a loaded 2-core machine takes seconds to start node with tsx; a blocked read would never finish at all.
const WATCHDOG_MS = 60_000;

interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

/** `fsjob ...args` in this process (the command layer exactly as bin/fsjob.js runs it, without a node start-up). */
async function cli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const saved = new Map(Object.keys(env).map((name) => [name, process.env[name]]));
  const savedQueue = process.env['FSJOB_QUEUE'];
  delete process.env['FSJOB_QUEUE'];
  Object.assign(process.env, env);
  let stdout = '';
  let stderr = '';
  try {
    const status = await main(args, { stdout: (text) => void (stdout += text), stderr: (text) => void (stderr += text) });
    return { status, stdout, stderr };
  } finally {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    if (savedQueue === undefined) delete process.env['FSJOB_QUEUE'];
    else process.env['FSJOB_QUEUE'] = savedQueue;
  }
}

/** `node bin/fsjob.js ...args` as a real process, killed by the watchdog if it hangs. */
function fsjob(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [BIN, ...args], { timeout: WATCHDOG_MS, killSignal: 'SIGKILL', env: { ...process.env, FSJOB_QUEUE: '', ...env }, maxBuffer: 1 << 26 }, (error, stdout, stderr) => {
      if (error !== null && (error.killed || error.signal !== null)) return reject(new Error(`fsjob ${args.join(' ')} did not finish within ${WATCHDOG_MS} ms (watchdog)`));
      resolve({ status: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

function report(run: Run): ValidateReport {
  const parsed = JSON.parse(run.stdout) as ValidateReport;
  assert.equal(schemaErrors('report', parsed), [], 'the report matches schemas/report.schema.json');
  return parsed;
}

/** Jobs enqueued, claimed, run and finished properly, plus a queued one and one running under a live owner. */
async function cleanQueue(): Promise<Queue> {
  const queue = await newQueue('clean');
  const jobs: [Parameters<typeof enqueue>[1], number][] = [
    [{ argv: ['sh', '-c', 'echo hello; echo warn >&2'] }, 1],
    [{ argv: ['sh', '-c', 'cat'], stdinBytes: Buffer.from('fed through stdin\n') }, 1],
    [{ argv: ['sh', '-c', 'exit 3'], max_attempts: 2 }, 2],
    [{ argv: ['true'], dedupe: 'nightly', priority: 10 }, 1],
    [{ argv: ['true'], lane: 'deploy' }, 1],
  ];
  for (const [fields, attempts] of jobs) {
    const { id, spec } = await enqueue(queue, fields);
    for (let gen = 1; gen <= attempts; gen++) {
      await claim(queue, id, gen);
      if (spec.lane !== null) await publishHold(queue, 'lanes', spec.lane, gen, id, gen);
      await runJob(queue, id, gen, spec, gen);
    }
  }
  await enqueue(queue, { priority: -5 });
  const cancelled = (await enqueue(queue)).id;
  await cancel(queue, cancelled);
  const running = (await enqueue(queue, { lane: 'deploy' })).id;
  await claim(queue, running, 1, { worker_id: '0123456789abcdef' });
  await publishHold(queue, 'lanes', 'deploy', 2, running, 1);
  await exec(queue, running, 1, { group: (await liveGroup()).group });
  await registerWorker(queue, '0123456789abcdef', { jobs: [{ job_id: running, gen: 1 }] });
  return queue;
}

const clean = suite('a clean queue');
clean.after(async () => {
  await killChildren();
  await cleanupAll();
});

clean('jobs that really ran, a queued, a cancelling and a running job: exit 0 and no error or warning, with or without --strict', async () => {
  const queue = await cleanQueue();
  const human = await fsjob(['validate', queue.root]);
  const json = await cli(['validate', '--json', queue.root]);
  const strict = await cli(['validate', '--strict', queue.root]);
  const byOption = await cli(['validate', '--queue', queue.root, '--json']);
  assert.is(human.status, 0, human.stdout + human.stderr);
  assert.ok(/^8 jobs, 0 errors, 0 warnings, 0 infos$/m.test(human.stdout), human.stdout);
  assert.is(json.status, 0);
  const parsed = report(json);
  assert.equal(parsed.findings, []);
  assert.equal(parsed.targets, [queue.root]);
  assert.is(parsed.summary.jobs, 8);
  assert.ok(parsed.summary.files > 8 * 2);
  assert.is(strict.status, 0, strict.stdout);
  assert.equal(report(byOption).summary, parsed.summary, 'validate DIR and validate --queue DIR agree');
});

clean.run();

const status = suite('exit status and report');
status.after(async () => {
  await killChildren();
  await cleanupAll();
});

status('errors exit 1; warnings alone exit 0, and 1 with --strict; findings are grouped by job under a summary line', async () => {
  const erroneous = await newQueue('err');
  const { id } = await enqueue(erroneous);
  await chmod(join(erroneous.paths.job(id), 'spec.json'), 0o666);
  const warned = await newQueue('warn');
  await writeFile(join(warned.root, 'notes'), '', { mode: 0o600 });
  const error = await cli(['validate', erroneous.root]);
  const warning = await cli(['validate', warned.root]);
  const strictWarning = await cli(['validate', '--strict', warned.root]);
  const json = await cli(['validate', '--json', erroneous.root, warned.root]);
  assert.is(error.status, 1, error.stdout);
  const lines = error.stdout.split('\n');
  const jobLine = lines.indexOf(`  job ${id}`);
  assert.ok(jobLine > 0, error.stdout);
  assert.match(lines[jobLine + 1] ?? '', new RegExp(`error RECORD_MODE \\[SEC-5\\] ${join(erroneous.paths.job(id), 'spec.json')}`));
  assert.match(error.stdout, /^1 job, 1 error, 0 warnings, 0 infos$/m);
  assert.is(warning.status, 0, warning.stdout);
  assert.match(warning.stdout, /^  queue\n {4}warning ROOT_UNKNOWN_ENTRY \[LAYOUT-1\] /m);
  assert.is(strictWarning.status, 1);
  assert.is(json.status, 1);
  const parsed = report(json);
  assert.equal(parsed.targets, [erroneous.root, warned.root]);
  assert.equal(parsed.findings.map((finding) => [finding.code, finding.job_id]), [
    ['RECORD_MODE', id],
    ['ROOT_UNKNOWN_ENTRY', null],
  ]);
});

status('exit 2 when the audit cannot run: no such queue, a directory without fsjob.json, an unsafe root, nothing named', async () => {
  const unsafe = await newQueue('unsafe');
  await chmod(unsafe.root, 0o777);
  const plain = await freshDir('plain');
  const linked = join(await freshDir('link'), 'q');
  await symlink((await newQueue('target')).root, linked);
  const runs: Run[] = [];
  for (const args of [['--queue', join(plain, 'nowhere')], [plain], ['--queue', plain], [unsafe.root], ['--queue', linked], []]) {
    runs.push(await cli(['validate', ...args]));
  }
  for (const [index, run] of runs.entries()) {
    assert.is(run.status, 2, `case ${index}: ${run.stdout}${run.stderr}`);
    assert.is(run.stdout, '', `case ${index}`);
    assert.match(run.stderr, /^fsjob: /, `case ${index}`);
  }
});

status('with FSJOB_QUEUE set, `fsjob validate` alone audits that queue', async () => {
  const queue = await newQueue('env');
  const run = await cli(['validate', '--json'], { FSJOB_QUEUE: queue.root });
  assert.is(run.status, 0, run.stderr);
  assert.equal(report(run).targets, [queue.root]);
});

status('--help says validate never modifies a queue, and shows the queue form', async () => {
  const run = await fsjob(['validate', '--help']);
  assert.is(run.status, 0);
  assert.match(run.stdout, /never modifies a queue/);
  assert.match(run.stdout, /--queue/);
  assert.match(run.stdout, /--strict/);
});

status('progress is reported while jobs are scanned (the command shows it on a terminal), and not at all for a short audit', async () => {
  const queue = await newQueue('progress');
  for (let i = 0; i < 65; i++) await enqueue(queue);
  const ticks: [number, number][] = [];
  await auditQueue(queue.root, { progress: (checked, total) => ticks.push([checked, total]), progressIntervalMs: 0 });
  assert.equal(ticks, [
    [64, 65],
    [65, 65],
  ]);
  const quiet: [number, number][] = [];
  await auditQueue(queue.root, { progress: (checked, total) => quiet.push([checked, total]) });
  assert.equal(quiet, []);
});

status.run();

const safety = suite('the command is safe on a hostile queue');
safety.after(async () => {
  await killChildren();
  await cleanupAll();
});

safety('a queue with FIFOs where records, outputs and queue directories belong is audited promptly, and left exactly as it was', async () => {
  const queue = await newQueue('fifo');
  const { id } = await enqueue(queue);
  await claim(queue, id, 1);
  mkfifo(join(queue.paths.job(id), 'exec.1.json'));
  mkfifo(join(queue.paths.job(id), 'stdout.1'));
  mkfifo(join(queue.paths.dir('ready'), `1000-${id}x`));
  mkfifo(join(queue.root, 'fifo'));
  await mkdir(join(queue.paths.dir('dedupe'), 'x'.repeat(64)), { mode: 0o700 });
  const before = await snapshot(queue.root);
  const run = await fsjob(['validate', '--json', queue.root]);
  assert.is(run.status, 1, run.stderr);
  const codes = report(run).findings.map((finding) => finding.code);
  assert.ok(codes.includes('RECORD_NOT_REGULAR') && codes.includes('ENTRY_WRONG_TYPE'), codes.join(' '));
  const after = await snapshot(queue.root);
  assert.equal([...after.keys()], [...before.keys()]);
  for (const [path, entry] of before) assert.equal(after.get(path), entry, path);
});

safety.run();
