/**
 * `fsjob recover` when the filesystem refuses its writes (a read-only
 * remount of a tmpfs made by the test): the orphan it could not recover is
 * listed under `failed` with its errno and the exit status is 1, so a full
 * or read-only disk never reads as a recovered queue; nothing on disk
 * changed; once the filesystem takes writes again, recover finishes the job.
 *
 * Needs root (mount); where mounting is refused the test prints a SKIP line.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync } from 'node:fs';
import { enqueue } from '../../src/producer/index.ts';
import { cleanupAll } from '../support/helpers.ts';
import { deadIdentity, publishClaim } from '../support/consumer.ts';
import { assertNoCrash, fsjobCli, mountTmpfs, queueAndCwd, remount } from '../support/faults.ts';

const MIB = 1024 * 1024;

interface Failed {
  path: string;
  job_id: string | null;
  code: string;
  errno: string | null;
}

const refused = suite('recover on a filesystem that refuses writes');
refused.after(cleanupAll);

refused('an orphan that cannot be recovered on a read-only queue is listed as failed (EROFS) and recover exits 1; recovered once writable', async () => {
  const fsys = await mountTmpfs(4 * MIB, 'fsjob-recover-erofs');
  if (fsys === null) return;
  try {
    const { queue, cwd } = await queueAndCwd('fsjob-recover-erofs', fsys.dir);
    const id = (await enqueue(queue, { argv: ['true'] }, { cwd })).id;
    await publishClaim(queue, id, 1, await deadIdentity()); // a worker that died holding the job
    remount(fsys.dir, true);

    const run = fsjobCli(['recover', '--queue', queue.root, '--json']);
    assertNoCrash(run, 'fsjob recover on a read-only queue');
    assert.is(run.status, 1, `recover exits 1 when it could not recover a job: ${run.stdout}${run.stderr}`);
    const report = JSON.parse(run.stdout) as { claims_broken: unknown[]; skipped: unknown[]; failed: Failed[] };
    assert.equal(report.claims_broken, []);
    assert.equal(report.skipped, [], 'a refused write is not "left alone by design"');
    const failed = report.failed.find((entry) => entry.job_id === id);
    assert.ok(failed !== undefined, `the orphan is listed as failed: ${run.stdout}`);
    assert.is(failed.code, 'IO');
    assert.is(failed.errno, 'EROFS');
    assert.equal(readdirSync(queue.paths.job(id)).sort(), ['claim.1.json', 'spec.json'], 'nothing changed on disk');

    const text = fsjobCli(['recover', '--queue', queue.root]);
    assertNoCrash(text, 'fsjob recover (text)');
    assert.is(text.status, 1, text.stdout);

    remount(fsys.dir, false);
    const again = fsjobCli(['recover', '--queue', queue.root, '--json']);
    assert.is(again.status, 0, again.stdout + again.stderr);
    const recovered = JSON.parse(again.stdout) as { failed: Failed[]; requeued: { job_id: string; gen: number }[] };
    assert.equal(recovered.failed, []);
    assert.equal(recovered.requeued, [{ job_id: id, gen: 2 }], 'the claim was broken and the job given back: no attempt had started (RECOV-1 step 3)');
    assert.equal(readdirSync(queue.paths.job(id)).sort(), ['claim.1.json', 'claim.2.json', 'end.2.json', 'spec.json']);
  } finally {
    fsys.unmount();
  }
});

refused.run();
