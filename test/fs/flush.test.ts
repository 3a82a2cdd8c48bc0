/**
 * src/fs/flush.ts: where an fsync runs. Inline (no thread hand-off) only
 * while at most one operation of the process is in flight; the steps of
 * `together` run inline one after another when alone, else overlap on the
 * pool but for the last; FSJOB_INLINE_FSYNC=0
 * turns the inline path off.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { beginOperation, fsyncFd, inlineNow, operationsInFlight, together } from '../../src/fs/flush.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';

const rule = suite('fsync inline or on the pool (flush.ts)');
rule.after(cleanupAll);

rule('one operation in flight may fsync inline; a second one sends every fsync to the pool until it ends', () => {
  const base = operationsInFlight();
  const first = beginOperation();
  assert.is(inlineNow(), base === 0);
  const second = beginOperation();
  assert.is(inlineNow(), false);
  second();
  second(); // a second end changes nothing
  assert.is(operationsInFlight(), base + 1);
  first();
  assert.is(operationsInFlight(), base);
});

rule('a pipelined batch (weight 2) never fsyncs inline, even alone', () => {
  const batch = beginOperation(2);
  assert.is(inlineNow(), false);
  batch();
});

rule('together, alone: every step inline, one after another (no hand-off); each runs, the first failure in order is thrown', async () => {
  const alone = operationsInFlight() === 0 ? beginOperation() : undefined;
  try {
    assert.is(inlineNow(), operationsInFlight() <= 1, 'the test runs with one operation at most');
    const seen: string[] = [];
    const step = (name: string, fail?: boolean) => async (): Promise<void> => {
      seen.push(`${name} ${inlineNow()}`);
      await Promise.resolve();
      seen.push(`${name} done`);
      if (fail === true) throw new Error(name);
    };
    await together([step('a'), step('b'), step('c')]);
    // One after another: a step starts only once the one before it settled.
    assert.equal(seen, ['a true', 'a done', 'b true', 'b done', 'c true', 'c done']);
    seen.length = 0;
    let caught: unknown;
    try {
      await together([step('a'), step('b', true), step('c', true)]);
    } catch (error) {
      caught = error;
    }
    assert.is((caught as Error).message, 'b');
    assert.equal(seen, ['a true', 'a done', 'b true', 'b done', 'c true', 'c done'], 'a failure stops no later step');
  } finally {
    alone?.();
  }
});

rule('together, beside another operation: every step but the last starts with the inline path off, all at once; the first failure in order is thrown', async () => {
  const other = beginOperation(2);
  try {
    const seen: boolean[] = [];
    let running = 0;
    let most = 0;
    const step = (fail?: string) => async (): Promise<void> => {
      seen.push(inlineNow());
      running++;
      most = Math.max(most, running);
      await new Promise((resolve) => setImmediate(resolve));
      running--;
      if (fail !== undefined) throw new Error(fail);
    };
    await together([step(), step(), step()]);
    assert.equal(seen, [false, false, false]);
    assert.is(most, 3, 'the steps overlap');
    let caught: unknown;
    try {
      await together([step(), step('second'), step('third')]);
    } catch (error) {
      caught = error;
    }
    assert.is((caught as Error).message, 'second');
  } finally {
    other();
  }
});

rule('fsyncFd resolves for an open file and rejects with the errno for a bad descriptor, inline and on the pool alike', async () => {
  const dir = await freshDir('flush');
  for (const busy of [false, true]) {
    const other = busy ? beginOperation(2) : () => undefined;
    try {
      assert.is(inlineNow(), !busy && operationsInFlight() <= 1);
      const fd = openSync(join(dir, `f${busy}`), 'wx', 0o600);
      await fsyncFd(fd);
      closeSync(fd);
      const error = await fsyncFd(fd).then(
        () => undefined,
        (e: unknown) => e as NodeJS.ErrnoException,
      );
      assert.is(error?.code, 'EBADF', `a closed descriptor (${busy ? 'pool' : 'inline'})`);
    } finally {
      other();
    }
  }
});

rule('FSJOB_INLINE_FSYNC=0 turns the inline path off for the whole process', () => {
  const script = `import { inlineNow } from ${JSON.stringify(new URL('../../src/fs/flush.ts', import.meta.url).pathname)}; process.stdout.write(String(inlineNow()));`;
  const run = (value: string): string =>
    execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { env: { ...process.env, FSJOB_INLINE_FSYNC: value }, encoding: 'utf8' });
  assert.is(run('0'), 'false');
  assert.is(run('1'), 'true');
});

rule.run();
