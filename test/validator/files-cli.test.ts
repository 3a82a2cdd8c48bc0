import { execFile } from 'node:child_process';
import { mkdir, readFile, readdir, symlink, truncate, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { ValidateReport, VectorCase, VectorFile } from '../../src/records/codec.ts';
import { schemaErrors } from '../../src/records/schemas.ts';
import { cleanupAll, freshDir, mkfifo } from '../support/helpers.ts';
import { FSJOB_BIN } from '../support/cli.ts';

const BIN = FSJOB_BIN;
const VECTORS = new URL('../../conformance/vectors/', import.meta.url);
// Only a hang guard (a blocked read never exits): node + tsx start-up alone took over 5 s on the shared 2-core machine.
const WATCHDOG_MS = 60_000;

interface Run {
  status: number;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs `node bin/fsjob.js ...args` in `cwd`; fails if it has not exited within `watchdogMs`. */
function fsjob(args: string[], cwd: string, watchdogMs = WATCHDOG_MS): Promise<Run> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [BIN, ...args], { cwd, timeout: watchdogMs, killSignal: 'SIGKILL', maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const ms = Date.now() - started;
      if (error !== null && (error.killed || error.signal !== null)) {
        reject(new Error(`fsjob ${args.slice(0, 4).join(' ')} ... still running after ${watchdogMs} ms (watchdog)`));
        return;
      }
      const status = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      resolve({ status, stdout, stderr, ms });
    });
  });
}

/** Runs `work` over `items`, at most `limit` at a time (each run is a whole node process). */
async function pool<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  const worker = async (): Promise<void> => {
    for (let item = queue.shift(); item !== undefined; item = queue.shift()) await work(item);
  };
  await Promise.all(Array.from({ length: limit }, worker));
}

function caseBytes(test: VectorCase): Buffer {
  if (test.raw !== undefined) return Buffer.from(test.raw, 'utf8');
  if (test.raw_base64 !== undefined) return Buffer.from(test.raw_base64, 'base64');
  return Buffer.from(`${JSON.stringify(test.data)}\n`, 'utf8');
}

async function writePrivate(path: string, bytes: Buffer | string): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  await writeFile(path, bytes, { mode: 0o600 });
}

function assertReport(stdout: string): ValidateReport {
  const report = JSON.parse(stdout) as ValidateReport;
  assert.equal(schemaErrors('report', report), [], 'the --json report matches schemas/report.schema.json');
  return report;
}

const vectors = suite('fsjob validate on the vector files');

vectors('every vector case written to disk gets the verdict and finding code of the vector', async () => {
  const root = await freshDir('fsjob-vectors');
  const names = (await readdir(VECTORS)).filter((name) => name.endsWith('.json'));
  await pool(names, 2, async (name) => {
    const file = JSON.parse(await readFile(new URL(name, VECTORS), 'utf8')) as VectorFile;
    const paths: string[] = [];
    for (const [index, test] of file.tests.entries()) {
      // Cases about names sit under their file_name; the others under a name that fixes nothing.
      const path = join(file.record_type, String(index), test.file_name ?? 'case.json');
      await writePrivate(join(root, path), caseBytes(test));
      paths.push(path);
    }
    const run = await fsjob(['validate', '--json', '--type', file.record_type, ...paths], root, 30_000);
    const report = assertReport(run.stdout);
    assert.is(run.status, file.tests.every((test) => test.valid) ? 0 : 1, `${name}: exit status`);
    assert.is(report.summary.files, file.tests.length);
    for (const [index, test] of file.tests.entries()) {
      const errors = report.findings.filter((finding) => finding.path === paths[index] && finding.severity === 'error');
      assert.is(errors.length === 0, test.valid, `${name}: ${test.description}: ${JSON.stringify(errors)}`);
      if (test.finding !== undefined) assert.is(errors[0]?.code, test.finding, `${name}: ${test.description}`);
    }
  });
});

vectors.after(cleanupAll);
vectors.run();

const refusals = suite('fsjob validate refuses what a reader must not open');

refusals('a FIFO, a symlink and a 50 MB file are each answered at once with exit 1 and a finding naming the path and clause', async () => {
  const root = await freshDir('fsjob-refuse');
  await writePrivate(join(root, 'real', 'receipt.json'), '{}\n');
  await mkdir(join(root, 'fifo'), { mode: 0o700 });
  mkfifo(join(root, 'fifo', 'claim.1.json'));
  await mkdir(join(root, 'link'), { mode: 0o700 });
  await symlink(join(root, 'real', 'receipt.json'), join(root, 'link', 'receipt.json'));
  await writePrivate(join(root, 'big', 'spec.json'), '');
  await truncate(join(root, 'big', 'spec.json'), 50 * 1024 * 1024);

  // One process for the three: had any read blocked, it would not exit before the watchdog.
  const cases: [string, string, string][] = [
    ['fifo/claim.1.json', 'RECORD_NOT_REGULAR', 'SEC-3'],
    ['link/receipt.json', 'RECORD_SYMLINK', 'SEC-2'],
    ['big/spec.json', 'RECORD_TOO_LARGE', 'SEC-4'],
  ];
  const run = await fsjob(['validate', ...cases.map(([path]) => path)], root);
  assert.is(run.status, 1, run.stderr);
  assert.ok(run.ms < WATCHDOG_MS, `took ${run.ms} ms`);
  for (const [path, code, clause] of cases) {
    const line = run.stdout.split('\n').find((text) => text.includes(` ${code} `));
    assert.ok(line !== undefined, run.stdout);
    assert.ok(line.includes(`[${clause}] ${path}`), line);
  }
});

refusals.after(cleanupAll);
refusals.run();

const output = suite('fsjob validate output and exit status');

const valid = '{"fsjob":"1.0","type":"queue","queue_id":"8a1f03c2b9de4471","created_ms":1764476044123}\n';

output('exit 0 and "OK" when every file is valid; the type comes from the name', async () => {
  const root = await freshDir('fsjob-ok');
  await writePrivate(join(root, 'fsjob.json'), valid);
  const run = await fsjob(['validate', 'fsjob.json'], root);
  assert.is(run.status, 0, run.stderr);
  assert.match(run.stdout, /^fsjob\.json: OK \[queue\]$/m);
});

output('exit 1 on any finding: one block per file, one line per finding with path, clause, field and message', async () => {
  const root = await freshDir('fsjob-bad');
  await writePrivate(join(root, 'good', 'fsjob.json'), valid);
  await writePrivate(join(root, 'bad', 'fsjob.json'), valid.replace('"created_ms":1764476044123', '"created_ms":-1,"surprise":1'));
  const files = ['good/fsjob.json', 'bad/fsjob.json'];
  const [human, json] = await Promise.all([fsjob(['validate', ...files], root), fsjob(['validate', '--json', ...files], root)]);
  assert.is(human.status, 1);
  assert.match(human.stdout, /^good\/fsjob\.json: OK \[queue\]$/m);
  assert.match(human.stdout, /^bad\/fsjob\.json: INVALID/m);
  assert.match(human.stdout, /error RECORD_SCHEMA \[REC-5\] bad\/fsjob\.json \/created_ms: /);
  assert.match(human.stdout, /error RECORD_UNKNOWN_MEMBER \[VER-2\] bad\/fsjob\.json \/surprise: /);
  assert.is(json.status, 1);
  const report = assertReport(json.stdout);
  assert.equal(report.summary, { errors: 2, warnings: 0, infos: 0, files: 2, jobs: 0 });
  assert.equal(report.targets, files);
  assert.equal(report.findings.map((finding) => [finding.code, finding.path, finding.field]), [
    ['RECORD_SCHEMA', 'bad/fsjob.json', '/created_ms'],
    ['RECORD_UNKNOWN_MEMBER', 'bad/fsjob.json', '/surprise'],
  ]);
});

output('exit 2 on usage errors (no file, unknown type, a name that tells no type, a missing file, an unknown option)', async () => {
  const root = await freshDir('fsjob-usage');
  await writePrivate(join(root, 'fsjob.json'), valid);
  await writePrivate(join(root, 'notes.json'), valid);
  const runs = await Promise.all([
    fsjob(['validate'], root),
    fsjob(['validate', '--type', 'bogus', 'fsjob.json'], root),
    fsjob(['validate', 'notes.json'], root),
    fsjob(['validate', 'missing.json'], root),
    fsjob(['validate', '--no-such-option', 'fsjob.json'], root),
  ]);
  for (const run of runs) {
    assert.is(run.status, 2, run.stderr);
    assert.is(run.stdout, '');
    assert.match(run.stderr, /^fsjob: /);
  }
  assert.match(runs[2]?.stderr ?? '', /notes\.json: cannot tell the record type/);
});

output('--help teaches with examples and exits 0', async () => {
  const [top, validate] = await Promise.all([fsjob(['--help'], process.cwd()), fsjob(['validate', '--help'], process.cwd())]);
  assert.is(top.status, 0);
  assert.match(top.stdout, /Examples:/);
  assert.is(validate.status, 0);
  assert.match(validate.stdout, /--type/);
  assert.match(validate.stdout, /Examples:/);
});

output.after(cleanupAll);
output.run();
