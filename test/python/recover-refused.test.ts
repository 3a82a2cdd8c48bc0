/**
 * `python3 -m fsjob recover` when the filesystem refuses its writes (a
 * read-only remount of a tmpfs made by the test), as the reference's
 * (test/battery/recover-refused.test.ts): the orphan it could not recover is
 * listed under `failed` with its errno and the exit status is 1, nothing on
 * disk changed, and once the filesystem takes writes again recover finishes
 * the job. It stopped at the first refusal before, with one message.
 *
 * Needs root (mount); where mounting is refused the test prints a SKIP line.
 */
import { readdirSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enqueue } from '../../src/producer/index.ts';
import { cleanupAll } from '../support/helpers.ts';
import { deadIdentity, publishClaim } from '../support/consumer.ts';
import { mountTmpfs, queueAndCwd, remount } from '../support/faults.ts';
import { PYTHON, PYTHON_DIR, run, type Run } from './support.ts';

const MIB = 1024 * 1024;

function recover(root: string): Promise<Run> {
  return run(PYTHON, ['-S', '-m', 'fsjob', 'recover', '--queue', root, '--json'], { env: { ...process.env, PYTHONPATH: PYTHON_DIR }, watchdogMs: 120_000 });
}

const refused = suite('python3 -m fsjob recover on a filesystem that refuses writes');
refused.after(cleanupAll);

refused('an orphan it cannot recover on a read-only queue is listed as failed (EROFS), exit 1; recovered once writable', async () => {
  const fsys = await mountTmpfs(4 * MIB, 'fsjob-py-recover-erofs');
  if (fsys === null) return;
  try {
    const { queue, cwd } = await queueAndCwd('fsjob-py-recover-erofs', fsys.dir);
    const id = (await enqueue(queue, { argv: ['true'] }, { cwd })).id;
    await publishClaim(queue, id, 1, await deadIdentity()); // a worker that died holding the job
    remount(fsys.dir, true);
    const ro = await recover(queue.root);
    assert.is(ro.status, 1, `${ro.stdout}${ro.stderr}`);
    assert.not.match(ro.stderr, /Traceback/);
    const report = JSON.parse(ro.stdout) as { claims_broken: unknown[]; failed: { job_id: string | null; code: string; errno: string | null }[] };
    assert.equal(report.claims_broken, []);
    assert.equal(report.failed.filter((entry) => entry.job_id === id).map((entry) => [entry.code, entry.errno]), [['IO', 'EROFS']]);
    assert.equal(readdirSync(queue.paths.job(id)).sort(), ['claim.1.json', 'spec.json'], 'nothing changed on disk');
    remount(fsys.dir, false);
    const rw = await recover(queue.root);
    assert.is(rw.status, 0, rw.stdout + rw.stderr);
    const again = JSON.parse(rw.stdout) as { failed: unknown[]; requeued: { job_id: string; gen: number }[] };
    assert.equal([again.failed, again.requeued], [[], [{ job_id: id, gen: 2 }]]);
  } finally {
    fsys.unmount();
  }
});

refused.run();
