/**
 * `--output FILE` (src/cli/report-file.ts): `fsjob validate` and `fsjob
 * conformance` write their JSON report to a file, whole or not at all,
 * never into an audited queue.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { schemaErrors } from '../../src/records/schemas.ts';
import { FSJOB_BIN } from '../support/cli.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { tree } from '../support/producer.ts';

function fsjob(args: string[], cwd: string): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, [FSJOB_BIN, ...args], { cwd, encoding: 'utf8', timeout: 120_000 });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

async function queueWithAJob(): Promise<{ dir: string; queue: string }> {
  const dir = await freshDir('report-file');
  const queue = join(dir, 'q');
  assert.is(fsjob(['init', '--queue', queue], dir).status, 0);
  assert.is(fsjob(['enqueue', '--queue', queue, '--', 'true'], dir).status, 0);
  return { dir, queue };
}

const output = suite('--output FILE');
output.after(cleanupAll);

output('fsjob validate --output writes the JSON report while stdout keeps the text', async () => {
  const { dir, queue } = await queueWithAJob();
  const run = fsjob(['validate', queue, '--output', 'reports/audit.json'], dir);
  assert.is(run.status, 1, 'a missing parent directory is not created: the write fails (IO)');
  await mkdir(join(dir, 'reports'));
  const ok = fsjob(['validate', queue, '--output', 'reports/audit.json'], dir);
  assert.is(ok.status, 0, ok.stderr);
  assert.match(ok.stdout, '0 errors', 'the human form on stdout');
  const report = JSON.parse(await readFile(join(dir, 'reports', 'audit.json'), 'utf8')) as { summary: { jobs: number; errors: number }; targets: string[] };
  assert.equal(schemaErrors('report', report), [], 'the file matches schemas/report.schema.json');
  assert.equal([report.summary.jobs, report.summary.errors, report.targets], [1, 0, [queue]]);
  assert.equal(await readdir(join(dir, 'reports')), ['audit.json'], 'no temporary file left beside it');
});

output('an existing report is replaced whole', async () => {
  const { dir, queue } = await queueWithAJob();
  await writeFile(join(dir, 'audit.json'), 'the old report\n');
  assert.is(fsjob(['validate', '--json', queue, '--output', 'audit.json'], dir).status, 0);
  const text = await readFile(join(dir, 'audit.json'), 'utf8');
  assert.ok(text.startsWith('{') && text.endsWith('}\n'), text.slice(0, 80));
  assert.equal(await readdir(dir), ['audit.json', 'q']);
});

output('a report is never written into the queue it audits: exit 2, the queue untouched', async () => {
  const { dir, queue } = await queueWithAJob();
  const before = await tree(queue);
  for (const inside of [join(queue, 'audit.json'), join(queue, 'tmp', 'audit.json')]) {
    const run = fsjob(['validate', queue, '--output', inside], dir);
    assert.is(run.status, 2, run.stderr);
    assert.match(run.stderr, 'is inside the queue');
  }
  assert.equal(await tree(queue), before);
});

output('a report that cannot be written is an error naming the file (exit 1)', async () => {
  const { dir, queue } = await queueWithAJob();
  await writeFile(join(dir, 'not-a-dir'), '');
  const run = fsjob(['validate', queue, '--output', 'not-a-dir/audit.json'], dir);
  assert.is(run.status, 1, run.stderr);
  assert.match(run.stderr, 'cannot write the report to not-a-dir/audit.json (ENOTDIR)');
});

output('fsjob conformance --output writes its JSON report (schemas/conformance-report.schema.json)', async () => {
  const dir = await freshDir('report-file-conformance');
  const run = fsjob(['conformance', '--case', 'producer/init', '--output', 'conformance.json'], dir);
  assert.is(run.status, 0, run.stdout + run.stderr);
  const report = JSON.parse(await readFile(join(dir, 'conformance.json'), 'utf8')) as unknown;
  assert.equal(schemaErrors('conformance-report', report), []);
});

output.run();
