/**
 * A job blocked behind a held one (its dependency, or one further up the
 * chain) runs only once someone releases that one: no worker will. `fsjob
 * wait` and `fsjob logs -f` on it, with a live worker serving the queue,
 * used to wait in silence; they name the held job to release. `fsjob status
 * ID` says it too, with what each dependency says now (--json as well).
 */
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enqueue } from '../../src/producer/index.ts';
import { initQueue } from '../../src/model/queue.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { runFsjob, startFsjob } from '../support/cli.ts';
import { assertOutputSchema } from '../support/output-schemas.ts';
import { registerWorker } from '../support/validate-queue.ts';

const behind = suite('wait and logs -f on a job blocked behind a held one name the held job');
behind.after(cleanupAll);

behind('two dependencies up: wait and logs -f name the held job to release (a live worker serves the queue)', async () => {
  const dir = await freshDir('fsjob-behind-held');
  const queue = await initQueue(join(dir, 'q'));
  await registerWorker(queue, 'a1b2c3d4e5f60718');
  const held = await enqueue(queue, { argv: ['true'], hold: true });
  const middle = await enqueue(queue, { argv: ['true'], after: [{ job_id: held.id, when: 'succeeded' }] });
  const last = await enqueue(queue, { argv: ['true'], after: [{ job_id: middle.id, when: 'finished' }] });
  await Promise.all(
    [['wait', '--timeout', '30s'], ['logs', '-f']].map(async (args) => {
      const run = startFsjob([...args, '-q', queue.root, last.id], { cwd: dir });
      try {
        await run.waitForStderr(held.id, `${args[0] ?? ''}: the held job's id`);
      } finally {
        run.child.kill('SIGTERM');
        await run.result;
      }
    }),
  );
});

behind('status ID: each dependency judged now, and the held job up the chain (--json: dependencies, held_upstream)', async () => {
  const dir = await freshDir('fsjob-behind-held');
  const queue = await initQueue(join(dir, 'q'));
  const held = await enqueue(queue, { argv: ['true'], hold: true });
  const middle = await enqueue(queue, { argv: ['true'], after: [{ job_id: held.id, when: 'succeeded' }] });
  const last = await enqueue(queue, { argv: ['true'], after: [{ job_id: middle.id, when: 'finished' }] });
  const [report, plain] = await Promise.all([runFsjob(['status', '-q', queue.root, last.id, '--json'], { cwd: dir }), runFsjob(['status', '-q', queue.root, held.id, '--json'], { cwd: dir })]);
  assert.is(report.status, 0, report.stderr);
  const parsed = JSON.parse(report.stdout) as { status: string; dependencies: unknown[]; held_upstream: string | null };
  assertOutputSchema('status', parsed);
  assert.equal([parsed.status, parsed.dependencies, parsed.held_upstream], ['blocked', [{ job_id: middle.id, when: 'finished', state: 'pending', what: null }], held.id]);
  const heldReport = JSON.parse(plain.stdout) as { dependencies: unknown[]; held_upstream: string | null };
  assertOutputSchema('status', heldReport);
  assert.equal([heldReport.dependencies, heldReport.held_upstream], [[], null], 'a held job itself waits for its own release, not for another');
});

behind.run();
