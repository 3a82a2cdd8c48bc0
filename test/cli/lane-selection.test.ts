/**
 * `fsjob wait --lane L` and `fsjob release --lane L` select the jobs of a
 * lane. No job has the lane "" (enqueue refuses it), so an empty value, as
 * `--lane "$LANE"` with LANE unset gives, is a usage error (exit 2), not a
 * selection of nothing that exits 0 as if every job had succeeded or been
 * released; the held job of the queue stays held.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enqueue } from '../../src/producer/index.ts';
import { initQueue } from '../../src/model/queue.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { runFsjob } from '../support/cli.ts';

const lanes = suite('wait and release: --lane with an empty value');
lanes.after(cleanupAll);

lanes('wait --lane "", release --lane "" and --lane=: exit 2, nothing released', async () => {
  const dir = await freshDir('fsjob-lane-selection');
  const queue = await initQueue(join(dir, 'q'));
  const held = await enqueue(queue, { argv: ['true'], hold: true });
  const q = ['-q', queue.root];
  const runs = await Promise.all([['wait', ...q, '--lane', ''], ['release', ...q, '--lane', ''], ['release', ...q, '--lane=', '--json']].map((args) => runFsjob(args, { cwd: dir })));
  assert.equal(runs.map((run) => run.status), [2, 2, 2], runs.map((run) => run.stderr).join(''));
  assert.is((JSON.parse(runs[2]?.stdout ?? '') as { error: { code: string } }).error.code, 'USAGE');
  assert.ok(existsSync(queue.paths.gatedJob(held.id)) && !existsSync(join(queue.paths.gatedJob(held.id), 'release.json')), 'still held (HOLD-1)');
});

lanes.run();
