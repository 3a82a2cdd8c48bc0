/**
 * src/fs/publish-now.ts: a record published in a held directory while
 * fsyncs run inline takes a synchronous road; with another operation in
 * flight (flush.ts) it takes write.ts's. Each case runs on both roads and
 * asserts the same files on disk, the same temp names left (none), and the
 * same refusal code and clause.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { OpenDir, heldHandles } from '../../src/fs/safefs.ts';
import { beginOperation, inlineNow } from '../../src/fs/flush.ts';
import { FsjobError } from '../../src/base/errors.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';

const roads = suite('publishing a record: the inline road and the pool road agree (PUB-1..PUB-6)');
roads.after(cleanupAll);

type Road = 'inline' | 'pool';
const ROADS: readonly Road[] = ['inline', 'pool'];

/** A fresh job directory held open, and `use` run with fsyncs inline or (another operation in flight) on the pool. */
async function onRoad<T>(road: Road, use: (dir: OpenDir, path: string) => Promise<T>): Promise<T> {
  const root = await freshDir(`publish-now-${road}`);
  mkdirSync(join(root, 'jobs', 'j1'), { recursive: true, mode: 0o700 });
  const dir = OpenDir.root(root, { root }).openChild('jobs').openChild('j1');
  const end = road === 'pool' ? beginOperation(2) : () => undefined;
  try {
    assert.is(inlineNow(), road === 'inline', `the ${road} road is the one taken`);
    return await use(dir, join(root, 'jobs', 'j1'));
  } finally {
    end();
    dir.close();
  }
}

async function refusal(promise: Promise<unknown>): Promise<FsjobError> {
  try {
    await promise;
  } catch (error) {
    assert.instance(error, FsjobError);
    return error as FsjobError;
  }
  assert.unreachable('expected a refusal');
  throw new Error('unreachable');
}

const skip = (name: string, reason: string): void => roads(`${name} (skipped: ${reason})`, () => undefined);

if (!heldHandles()) {
  skip('every case', 'no /proc/self/fd that resolves names here: every publish takes write.ts\'s road');
} else {
  for (const road of ROADS) {
    roads(`${road}: a link to a free name writes the bytes, returns the path messages name, leaves no temp name`, async () => {
      await onRoad(road, async (dir, path) => {
        const target = await dir.publish('claim.1.json', '{"a":1}\n', 'link', { lookFirst: false });
        assert.is(target, join(path, 'claim.1.json'));
        assert.is(readFileSync(join(path, 'claim.1.json'), 'utf8'), '{"a":1}\n');
        assert.equal(readdirSync(path), ['claim.1.json']);
      });
    });

    roads(`${road}: a link to a taken name is EXISTS (PUB-3); the record there is untouched and the temp name removed`, async () => {
      await onRoad(road, async (dir, path) => {
        writeFileSync(join(path, 'exec.1.json'), 'theirs\n', { mode: 0o600 });
        const error = await refusal(dir.publish('exec.1.json', 'ours\n', 'link', { lookFirst: false }));
        assert.is(error.code, 'EXISTS');
        assert.is(error.clause, 'PUB-3');
        assert.is(readFileSync(join(path, 'exec.1.json'), 'utf8'), 'theirs\n');
        assert.equal(readdirSync(path), ['exec.1.json']);
      });
    });

    roads(`${road}: looking first, a taken name is EXISTS before any temp file is made`, async () => {
      await onRoad(road, async (dir, path) => {
        writeFileSync(join(path, 'end.1.json'), 'theirs\n', { mode: 0o600 });
        const error = await refusal(dir.publish('end.1.json', 'ours\n', 'link'));
        assert.is(error.code, 'EXISTS');
        assert.equal(readdirSync(path), ['end.1.json']);
      });
    });

    roads(`${road}: a symlink at the name is refused (SEC-2) and nothing is written through it`, async () => {
      await onRoad(road, async (dir, path) => {
        const outside = await freshDir(`publish-now-out-${road}`);
        symlinkSync(join(outside, 'x'), join(path, 'receipt.json'));
        const error = await refusal(dir.publish('receipt.json', 'ours\n', 'link', { lookFirst: false }));
        assert.is(error.code, 'SYMLINK_REFUSED');
        assert.equal(readdirSync(outside), []);
        assert.equal(readdirSync(path), ['receipt.json']);
      });
    });

    roads(`${road}: a rename replaces the previous version (PUB-4); a directory at the name is NOT_REGULAR`, async () => {
      await onRoad(road, async (dir, path) => {
        await dir.publish('state.1.json', 'one\n', 'rename');
        await dir.publish('state.1.json', 'two\n', 'rename');
        assert.is(readFileSync(join(path, 'state.1.json'), 'utf8'), 'two\n');
        mkdirSync(join(path, 'state.2.json'));
        const error = await refusal(dir.publish('state.2.json', 'x\n', 'rename'));
        assert.is(error.code, 'NOT_REGULAR');
        assert.equal(readdirSync(path).sort(), ['state.1.json', 'state.2.json']);
      });
    });

    roads(`${road}: a name of more than one component is refused before anything is made`, async () => {
      await onRoad(road, async (dir, path) => {
        const error = await refusal(dir.publish('../claim.1.json', 'x\n', 'link', { lookFirst: false }));
        assert.is(error.code, 'INVALID_ID');
        assert.equal(readdirSync(path), []);
      });
    });

    roads(`${road}: publishSoon and removeSoon are done before they return on the inline road only, with the same files`, async () => {
      await onRoad(road, async (dir, path) => {
        const published = dir.publishSoon('receipt.json', '{"r":1}\n', 'link', { lookFirst: false });
        // The inline road hands back the path itself; the pool road its promise, the record not yet there.
        assert.is(typeof published === 'string', road === 'inline');
        if (road === 'pool') assert.equal(readdirSync(path).filter((name) => !name.startsWith('.')), []);
        assert.is(await published, join(path, 'receipt.json'));
        assert.is(readFileSync(join(path, 'receipt.json'), 'utf8'), '{"r":1}\n');
        assert.equal(readdirSync(path), ['receipt.json']);
        // A removal's unlink answers at once on either road (no fsync): whether it removed the entry.
        assert.is(dir.removeSoon('receipt.json'), true);
        assert.is(dir.removeSoon('receipt.json'), false);
        assert.equal(readdirSync(path), []);
      });
    });

    roads(`${road}: a closed handle publishes nothing`, async () => {
      await onRoad(road, async (dir, path) => {
        dir.close();
        const error = await refusal(dir.publish('claim.1.json', 'x\n', 'link', { lookFirst: false }));
        assert.is(error.code, 'USAGE');
        assert.equal(readdirSync(path), []);
      });
    });
  }
}

roads.run();
