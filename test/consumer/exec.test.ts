import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, readFileSync, renameSync, statSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { enqueue, freshQueue, newJobId } from '../support/enqueue.ts';
import { drain, receiptOf } from '../support/consumer.ts';
import { cleanupAll, freshDir, mkfifo, withWatchdog } from '../support/helpers.ts';
import { readyEntryName } from '../../src/model/layout.ts';
import { DEFAULT_COMMAND_PATH } from '../../src/base/constants.ts';

const output = suite('output bounds (EXEC-1, RCPT-5)');
output.after(cleanupAll);

output('a 100 MB command does not block; the file holds exactly the bound and the receipt says truncated', async () => {
  const q = await freshQueue();
  const id = await enqueue(q, { argv: ['head', '-c', '104857600', '/dev/zero'], max_output_bytes: 1_048_576 });
  await withWatchdog(60_000, drain(q));
  const r = receiptOf(q, id);
  assert.is(r.outcome, 'succeeded');
  assert.is(r.stdout?.bytes_total, 104_857_600);
  assert.is(r.stdout?.bytes_kept, 1_048_576);
  assert.is(r.stdout?.truncated, true);
  assert.is(statSync(q.paths.jobFile(id, 'stdout.1')).size, 1_048_576);
  assert.is(r.stderr?.truncated, false);
});

output("the consumer's --max-output bounds a job that asks for more", async () => {
  const q = await freshQueue();
  const id = await enqueue(q, { argv: ['sh', '-c', 'head -c 5000 /dev/zero >&2'], max_output_bytes: 4096 });
  await drain(q, { maxOutputBytes: 1000 });
  const r = receiptOf(q, id);
  assert.is(r.stderr?.bytes_kept, 1000);
  assert.is(r.stderr?.bytes_total, 5000);
  assert.is(statSync(q.paths.jobFile(id, 'stderr.1')).size, 1000);
});

output.run();

const env = suite('environment, stdin and cwd (EXEC-5, EXEC-6, EXEC-7)');
env.after(cleanupAll);

env("the command sees exactly PATH, HOME, FSJOB_* and the spec's env: nothing of the worker's", async () => {
  const q = await freshQueue();
  process.env['FSJOB_TEST_SECRET'] = 'hunter2';
  try {
    const id = await enqueue(q, { argv: ['env'], env: { LANG: 'C.UTF-8', EXTRA: 'x y' } });
    await drain(q);
    const seen = Object.fromEntries(
      readFileSync(q.paths.jobFile(id, 'stdout.1'), 'utf8')
        .split('\n')
        .filter((line) => line.includes('='))
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    assert.not.ok('FSJOB_TEST_SECRET' in seen, 'a secret in the worker environment is absent');
    assert.equal(Object.keys(seen).sort(), ['EXTRA', 'FSJOB_ATTEMPT', 'FSJOB_JOB_ID', 'FSJOB_QUEUE', 'HOME', 'LANG', 'PATH']);
    assert.is(seen['FSJOB_JOB_ID'], id);
    assert.is(seen['FSJOB_ATTEMPT'], '1');
    assert.is(seen['FSJOB_QUEUE'], q.root);
    assert.is(seen['PATH'], DEFAULT_COMMAND_PATH);
    assert.is(seen['HOME'], homedir());
    assert.is(seen['EXTRA'], 'x y');
  } finally {
    delete process.env['FSJOB_TEST_SECRET'];
  }
});

env("the spec's PATH and HOME replace the defaults", async () => {
  const q = await freshQueue();
  const id = await enqueue(q, { argv: ['/bin/sh', '-c', 'echo "$PATH $HOME"'], env: { PATH: '/bin', HOME: '/tmp' } });
  await drain(q);
  assert.is(readFileSync(q.paths.jobFile(id, 'stdout.1'), 'utf8'), '/bin /tmp\n');
});

env('stdin is the job\'s stdin file, else /dev/null; the command runs in cwd', async () => {
  const q = await freshQueue();
  const dir = await freshDir('cwd');
  const withInput = await enqueue(q, { argv: ['cat'], stdin: 'line one\nline two\n' });
  const without = await enqueue(q, { argv: ['cat'] });
  const where = await enqueue(q, { argv: ['pwd'], cwd: dir });
  await withWatchdog(20_000, drain(q));
  assert.is(readFileSync(q.paths.jobFile(withInput, 'stdout.1'), 'utf8'), 'line one\nline two\n');
  assert.is(readFileSync(q.paths.jobFile(without, 'stdout.1'), 'utf8'), '');
  assert.is(receiptOf(q, without).outcome, 'succeeded');
  assert.is(readFileSync(q.paths.jobFile(where, 'stdout.1'), 'utf8'), `${dir}\n`);
});

env('a stdin file of another size, or a symlink in its place, is rejected stdin_unusable', async () => {
  const q = await freshQueue();
  const dir = await freshDir('stdin');
  const grown = await enqueue(q, { argv: ['cat'], stdin: 'abc' });
  writeFileSync(q.paths.jobFile(grown, 'stdin'), 'abcdef', { mode: 0o600 });
  const linked = await enqueue(q, { argv: ['cat'], stdin: 'abc' });
  writeFileSync(join(dir, 'elsewhere'), 'abc');
  unlinkSync(q.paths.jobFile(linked, 'stdin'));
  symlinkSync(join(dir, 'elsewhere'), q.paths.jobFile(linked, 'stdin'));
  await drain(q);
  for (const id of [grown, linked]) {
    const r = receiptOf(q, id);
    assert.is(r.outcome, 'rejected');
    assert.is(r.reason, 'stdin_unusable');
    assert.is(r.exit_code, 126);
  }
});

env('a FIFO planted as spec.json is rejected without hanging the worker (SEC-3, I7)', async () => {
  const q = await freshQueue();
  const id = newJobId();
  const staging = join(q.root, 'tmp', id);
  mkdirSync(staging, { mode: 0o700 });
  mkfifo(join(staging, 'spec.json'));
  writeFileSync(join(q.paths.dir('ready'), readyEntryName(0, id)), '', { mode: 0o600 });
  renameSync(staging, q.paths.job(id));
  const ok = await enqueue(q, { argv: ['true'] });
  await withWatchdog(20_000, drain(q));
  assert.is(receiptOf(q, id).outcome, 'rejected');
  assert.is(receiptOf(q, id).reason, 'invalid_spec');
  assert.is(receiptOf(q, ok).outcome, 'succeeded');
});

env.run();
