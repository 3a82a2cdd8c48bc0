/**
 * `fsjob status`: when each job started and finished and how long it ran
 * (the receipt's started_ms and finished_ms; a running job's exec record),
 * --label, and --sort by age, priority or duration, in the table and in
 * --json alike. Records are written straight, with the instants the test
 * chooses, so every figure is known exactly.
 */
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enqueue } from '../../src/producer/index.ts';
import { initQueue } from '../../src/model/queue.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { runFsjob } from '../support/cli.ts';
import { writeClaim, writeExec, writeReceipt } from '../support/producer.ts';

interface Row {
  id: string;
  status: string;
  priority: number | null;
  labels: Record<string, string> | null;
  started_ms: number | null;
  finished_ms: number | null;
  duration_ms: number | null;
}

const columns = suite('fsjob status: started, finished, duration; --label; --sort');
columns.after(cleanupAll);

columns('each job says when it started, finished and how long it ran; --label filters; --sort orders; the table shows the same', async () => {
  const dir = await freshDir('fsjob-status-columns');
  const queue = await initQueue(join(dir, 'q'));
  const start = Date.now() - 3_600_000;
  const long = await enqueue(queue, { argv: ['true'], labels: { batch: '1' } });
  const short = await enqueue(queue, { argv: ['true'], priority: 3 });
  const running = await enqueue(queue, { argv: ['true'], priority: 1 });
  const queued = await enqueue(queue, { argv: ['true'], priority: 9, labels: { batch: '1' } });
  await writeReceipt(queue, long.id, { started_ms: start, finished_ms: start + 200_000 });
  await writeReceipt(queue, short.id, { started_ms: start, finished_ms: start + 100_000 });
  await writeClaim(queue, running.id, 1); // owned by this live process: running
  await writeExec(queue, running.id, 1, 1);

  const q = ['-q', queue.root];
  const runs = await Promise.all([
    runFsjob(['status', ...q, '--json'], { cwd: dir }),
    runFsjob(['status', ...q, '--json', '--sort', 'priority'], { cwd: dir }),
    runFsjob(['status', ...q, '--json', '--sort', 'duration'], { cwd: dir }),
    runFsjob(['status', ...q, '--json', '--label', 'batch=1'], { cwd: dir }),
    runFsjob(['status', ...q, '--json', '--sort', 'duration', '--limit', '1'], { cwd: dir }),
    runFsjob(['status', ...q, '--sort', 'duration', '--label', 'batch=1'], { cwd: dir }),
  ]);
  for (const run of runs) assert.is(run.status, 0, run.stderr);
  const [plain, byPriority, byDuration, labelled, longest] = runs.slice(0, 5).map((run) => JSON.parse(run.stdout) as { jobs: Row[]; more: boolean });
  const order = (list: { jobs: Row[] } | undefined): string[] => (list?.jobs ?? []).map((job) => job.id);

  const rows = new Map(plain?.jobs.map((job) => [job.id, job]));
  assert.equal(order(plain), [queued.id, running.id, short.id, long.id], 'newest first by default');
  const finished = rows.get(long.id);
  assert.equal([finished?.started_ms, finished?.finished_ms, finished?.duration_ms, finished?.priority, finished?.labels], [start, start + 200_000, 200_000, 0, { batch: '1' }]);
  const now = rows.get(running.id);
  assert.ok(now?.started_ms !== null && now?.started_ms !== undefined && now.started_ms >= start, 'a running job: its exec record says when it started');
  assert.equal([now?.status, now?.finished_ms], ['running', null]);
  assert.ok((now?.duration_ms ?? -1) >= 0, 'and how long it has run so far');
  const waiting = rows.get(queued.id);
  assert.equal([waiting?.started_ms, waiting?.finished_ms, waiting?.duration_ms, waiting?.priority], [null, null, null, 9]);

  assert.equal(order(byPriority), [queued.id, running.id, short.id, long.id], 'the claim order (highest priority first), then finished jobs newest first');
  assert.equal(order(byDuration), [long.id, short.id, running.id, queued.id], 'longest run first; never started last');
  assert.equal(order(labelled), [queued.id, long.id], 'only batch=1');
  assert.equal([order(longest), longest?.more], [[long.id], true]);

  const table = runs[5]?.stdout ?? '';
  assert.match(table, /ID +STATUS +ATTEMPTS +LANE +PRI +AGE +STARTED +FINISHED +DURATION +RESULT +COMMAND/);
  const lines = table.split('\n').filter((line) => line.startsWith(long.id) || line.startsWith(queued.id));
  assert.is(lines.length, 2, table);
  assert.ok(lines[0]?.startsWith(long.id), 'sorted by duration');
  assert.match(lines[0] ?? '', / 3m20s +succeeded/, 'DURATION of the finished job');
  assert.match(lines[1] ?? '', / 9 +\S+ +- +- +- +- /, 'a queued job: priority 9, no start, end or duration');
  assert.match(table, /2 jobs labelled batch=1/);
});

columns.run();
