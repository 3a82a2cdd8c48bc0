/**
 * `fsjob init` on a path inside another queue (its jobs/, tmp/ or a job's
 * directory) is refused (UNSAFE_QUEUE, exit 1) and creates nothing: such a
 * queue would be a foreign entry of the outer one, removed with its jobs by
 * the outer gc (a job's directory) or TEMP-1 (tmp/). A queue beside another,
 * or under a directory that only happens to hold a file named fsjob.json, is
 * made as before.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { enqueue } from '../../src/producer/index.ts';
import { initQueue } from '../../src/model/queue.ts';
import { cleanupAll, freshDir, rejectsWith } from '../support/helpers.ts';
import { auditErrors, fsjobCli } from '../support/faults.ts';

const nested = suite('init inside another queue');
nested.after(cleanupAll);

nested('init inside jobs/, tmp/ or a job directory of a queue is refused and creates nothing; beside it, it works', async () => {
  const parent = await freshDir('fsjob-init-nested');
  const outer = await initQueue(join(parent, 'q'));
  const id = (await enqueue(outer, { argv: ['true'] }, { cwd: '/' })).id;
  const inside = { jobs: outer.paths.dir('jobs'), jobsChild: join(outer.paths.dir('jobs'), 'inner'), tmpChild: join(outer.paths.dir('tmp'), 'inner'), jobChild: join(outer.paths.job(id), 'deep', 'inner') };
  for (const path of [inside.jobsChild, inside.jobChild]) {
    const run = fsjobCli(['init', '--queue', path, '--json']);
    assert.is(run.status, 1, `init ${path}: ${run.stdout}${run.stderr}`);
    const error = (JSON.parse(run.stdout) as { error: { code: string; path: string } }).error;
    assert.is(error.code, 'UNSAFE_QUEUE');
    assert.is(error.path, path);
  }
  for (const path of [inside.jobs, inside.tmpChild]) await rejectsWith(initQueue(path), 'UNSAFE_QUEUE', { path });
  for (const path of Object.values(inside)) assert.not.ok(existsSync(join(path, 'fsjob.json')), `no queue record at ${path}`);
  for (const path of [inside.jobsChild, inside.tmpChild, join(outer.paths.job(id), 'deep')]) assert.not.ok(existsSync(path), `${path} was not created`);
  assert.equal(await auditErrors(outer), [], 'the outer queue is untouched');

  assert.is((await initQueue(join(parent, 'other'))).created, true, 'a queue beside another');
  assert.is((await initQueue(outer.root)).created, false, 're-init of the outer queue itself');
  // A project directory with a file of that name, and no jobs/, is no queue.
  const project = join(parent, 'project');
  mkdirSync(project);
  writeFileSync(join(project, 'fsjob.json'), '{}');
  assert.is((await initQueue(join(project, 'q'))).created, true, 'a queue under a directory that merely holds a file named fsjob.json');
});

nested.run();
