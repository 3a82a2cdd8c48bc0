/**
 * A drained Worker lets its process exit at once: once `run()` resolves
 * nothing of the worker's keeps the event loop alive (no timer, such as the
 * EXEC-12 pipe bound of its last command, and the guardian's pipe closes), so
 * a script that drains a queue ends when its work does. Asserted on what
 * holds the loop (process.getActiveResourcesInfo), not on a time.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { REPO } from '../../tools/package/app.ts';

const exec = promisify(execFile);

// Run from dist/ (made current by helpers.ts) as a user's plain script runs: no tsx loader holding handles of its own.
const SCRIPT = `
import { initQueue, enqueue, waitFor, Worker } from ${JSON.stringify(pathToFileURL(join(REPO, 'dist', 'src', 'index.js')).href)};
// What holds the loop before fsjob does anything: the pipes of stdout and stderr.
void process.stdout, process.stderr;
for (let turn = 0; turn < 5; turn += 1) await new Promise((resolve) => setImmediate(resolve));
const baseline = process.getActiveResourcesInfo();
const queue = await initQueue(process.argv[1]);
const command = await enqueue(queue, { argv: ['sh', '-c', 'echo out; echo err >&2'] });
const payload = await enqueue(queue, { handler: 'twice', payload: 21 });
const worker = new Worker({ queues: [queue], mode: 'drain' });
worker.handle('twice', ({ payload }) => payload * 2);
await worker.run();
const afterRun = process.getActiveResourcesInfo();
const outcomes = [(await waitFor(queue, command.id)).outcome, (await waitFor(queue, payload.id)).result];
// Let closing handles (the guardian's stdin) finish: a bounded number of loop turns, not a time.
let turns = 0;
const held = () => process.getActiveResourcesInfo().join() !== baseline.join();
while (held() && turns < 50) {
  await new Promise((resolve) => setImmediate(resolve));
  turns += 1;
}
process.stdout.write(JSON.stringify({ baseline, afterRun, left: process.getActiveResourcesInfo(), outcomes }) + '\\n');
`;

const exit = suite('a drained Worker');
exit.after(cleanupAll);

exit('lets its process exit at once: no timer left when run() resolves, nothing left a few loop turns later', async () => {
  const root = join(await freshDir('fsjob-worker-exit'), 'q');
  const { stdout } = await exec(process.execPath, ['--input-type=module', '-e', SCRIPT, root], { timeout: 60_000 });
  const seen = JSON.parse(stdout) as { baseline: string[]; afterRun: string[]; left: string[]; outcomes: unknown[] };
  assert.equal(seen.outcomes, ['succeeded', 42]);
  assert.equal(seen.afterRun.filter((resource) => resource === 'Timeout'), [], `holding the loop when run() resolved: ${seen.afterRun.join(', ')}`);
  assert.equal(seen.left, seen.baseline);
});

exit.run();
