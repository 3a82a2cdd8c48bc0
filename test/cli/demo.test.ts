/**
 * `fsjob demo` shows the command line behind each step, and every line it
 * prints works as printed: in a fresh clone (`node bin/fsjob.js`, what
 * README's set-up runs) the lines say `node bin/fsjob.js`, as a command on
 * PATH they say `fsjob`. The printed enqueue lines, run by sh against a
 * fresh queue, make the same spec records the demo made; the "try next"
 * lines run and exit 0.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { invokedAs } from '../../src/cli/commands/demo-run.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { runFsjob } from '../support/cli.ts';
import { REPO } from '../../tools/package/app.ts';

const exec = promisify(execFile);
const demo = suite('fsjob demo');
demo.after(cleanupAll);

/** sh -c LINE in the repository (where a fresh clone's user types it), with FSJOB_QUEUE as given; never throws. */
async function sh(line: string, queue: string): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec('sh', ['-c', line], { cwd: REPO, env: { ...process.env, FSJOB_QUEUE: queue, FSJOB_DIST_KEY: process.env['FSJOB_DIST_KEY'] ?? '' }, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

/** The spec records of a queue, without what differs between two enqueues of one request, sorted. */
function specsOf(queue: string): string[] {
  return readdirSync(join(queue, 'jobs'))
    .map((id) => {
      const { id: _id, created_ms: _created, producer: _producer, ...rest } = JSON.parse(readFileSync(join(queue, 'jobs', id, 'spec.json'), 'utf8')) as Record<string, unknown>;
      return JSON.stringify(rest);
    })
    .sort();
}

demo('the fsjob command is written as it was started: fsjob on PATH, else node and the script, relative to the working directory', () => {
  assert.is(invokedAs('/usr/local/bin/fsjob', '/home/me'), 'fsjob');
  assert.is(invokedAs('/home/me/app/node_modules/.bin/fsjob', '/home/me/app'), 'fsjob');
  assert.is(invokedAs('/src/fsjob/bin/fsjob.js', '/src/fsjob'), 'node bin/fsjob.js');
  assert.is(invokedAs('/src/fsjob/bin/fsjob.js', '/elsewhere'), 'node /src/fsjob/bin/fsjob.js');
  assert.is(invokedAs('/src/my dir/bin/fsjob.js', '/tmp'), "node '/src/my dir/bin/fsjob.js'");
});

demo('each step prints its command line; run as printed, the enqueue lines make the same jobs, and "try next" works', async () => {
  const ran = await runFsjob(['demo', '--keep'], { cwd: REPO });
  assert.is(ran.status, 0, ran.stderr);
  const queue = /^queue: (\S+)$/m.exec(ran.stdout)?.[1] ?? '';
  try {
    const steps = [...ran.stdout.matchAll(/^ {2}\$ (.*)$/gm)].map((match) => match[1] as string);
    assert.equal(steps.slice(0, 2), [`export FSJOB_QUEUE=${queue}      # the default of --queue`, 'node bin/fsjob.js init']);
    assert.ok(steps.includes('node bin/fsjob.js work --concurrency 3 --drain'), steps.join('\n'));
    assert.match(ran.stdout, /requested: node bin\/fsjob\.js cancel \S+ --reason 'the demo cancels it'/);
    const enqueues = steps.filter((line) => line.includes('node bin/fsjob.js enqueue'));
    assert.is(enqueues.length, 8);

    const again = join(await freshDir('fsjob-demo-again'), 'q');
    assert.is((await sh('node bin/fsjob.js init', again)).code, 0);
    const made = await Promise.all(enqueues.map((line) => sh(line, again)));
    made.forEach((result, index) => assert.is(result.code, 0, `${enqueues[index] ?? ''}: ${result.stderr}`));
    assert.equal(specsOf(again), specsOf(queue));

    const tryNext = ran.stdout.slice(ran.stdout.indexOf('try next')).split('\n').slice(1).map((line) => line.trim()).filter((line) => line !== '' && !line.includes(' &'));
    assert.is(tryNext.length, 4, tryNext.join('\n'));
    for (const line of tryNext) {
      assert.match(line, /^node bin\/fsjob\.js /);
      const result = await sh(line.replace(/\s+#.*$/, ''), '');
      assert.is(result.code, 0, `${line}: ${result.stdout}${result.stderr}`);
    }
  } finally {
    if (queue !== '') rmSync(join(queue, '..'), { recursive: true, force: true });
  }
});

demo.run();
