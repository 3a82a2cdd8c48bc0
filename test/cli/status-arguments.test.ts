/**
 * `fsjob status`'s arguments as a user types them: its --help names every
 * status a job can have (held and blocked too, the ones issue 26 added), and
 * a negative --limit is refused (exit 2) rather than taken for "all".
 */
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { initQueue } from '../../src/model/queue.ts';
import { OUTCOMES, STATUSES } from '../../src/cli/commands/status-options.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { runFsjob } from '../support/cli.ts';

const status = suite('fsjob status: its help and its --limit');
status.after(cleanupAll);

status('--help: the epilog names every status and every outcome', async () => {
  const dir = await freshDir('fsjob-status-args');
  const help = await runFsjob(['status', '--help'], { cwd: dir });
  assert.is(help.status, 0, help.stderr);
  const epilog = help.stdout.slice(help.stdout.indexOf('Statuses are'));
  for (const name of [...STATUSES, ...OUTCOMES]) assert.match(epilog, new RegExp(`\\b${name}\\b`), name);
});

status('--limit -1: usage error, exit 2, no table', async () => {
  const dir = await freshDir('fsjob-status-args');
  const queue = await initQueue(join(dir, 'q'));
  const [negative, all] = await Promise.all([runFsjob(['status', '-q', queue.root, '--limit', '-1', '--json'], { cwd: dir }), runFsjob(['status', '-q', queue.root, '--limit', '0', '--json'], { cwd: dir })]);
  assert.is(negative.status, 2);
  assert.is((JSON.parse(negative.stdout) as { error: { code: string } }).error.code, 'USAGE');
  assert.is(all.status, 0, '0 is all, as the help says');
});

status.run();
