/**
 * `npm test` runs the test files in parallel streams (tools/test/run.ts):
 * every test file must still run exactly once. Checked with uvu's own file
 * walk and pattern match (uvu/parse), on the split the committed timings
 * give, so a new, renamed or removed test file cannot fall out of the run.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { parse } from 'uvu/parse';
import { listTestFiles, loadTimings, partition, ROOT, splitProblems, TEST_DIR, type Stream } from '../../tools/test/streams.ts';

const streams = suite('test streams');

/** Every *.test.ts under test/, by a plain walk (not the code under test). */
function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? (e.name === 'node_modules' ? [] : walk(join(dir, e.name))) : e.name.endsWith('.test.ts') ? [relative(TEST_DIR, join(dir, e.name))] : []));
}

async function uvuRuns(pattern: string): Promise<string[]> {
  return (await parse(TEST_DIR, pattern)).suites.map((s) => s.name).sort();
}

streams('npm test runs its test files through tools/test/run.ts, after the type check and the build', () => {
  const script = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.test ?? '';
  const steps = script.split('&&').map((s) => s.trim());
  assert.equal(steps.length, 3, script);
  assert.match(steps[0] ?? '', /^npm run typecheck$/);
  assert.match(steps[1] ?? '', /tools\/build\/build\.ts --js --if-stale$/);
  assert.match(steps[2] ?? '', /^node --import tsx tools\/test\/run\.ts$/);
});

streams('the list of test files is every test/**/*.test.ts, as uvu selects them', async () => {
  const files = listTestFiles();
  assert.ok(files.length > 50, `found ${files.length}`);
  assert.equal(files, walk(TEST_DIR).sort((a, b) => a.localeCompare(b)));
  assert.equal([...files].sort(), await uvuRuns('\\.test\\.ts$'));
});

for (const count of [2, 1, 3]) {
  streams(`with ${count} stream(s) from the committed timings, uvu runs every test file in exactly one stream`, async () => {
    const files = listTestFiles();
    const split = partition(files, loadTimings(), count);
    assert.equal(splitProblems(split, files), []);
    const seen = new Map<string, number>();
    for (const stream of split) {
      const runs = await uvuRuns(stream.pattern);
      assert.equal(runs, [...stream.files].sort(), `stream ${stream.index}: uvu selects what it lists`);
      for (const name of runs) seen.set(name, (seen.get(name) ?? 0) + 1);
    }
    const wrong = files.filter((f) => seen.get(f) !== 1).map((f) => `${f}: ${seen.get(f) ?? 0} times`);
    assert.equal(wrong, []);
    assert.equal(seen.size, files.length);
  });
}

streams('a file without a measurement still lands in exactly one stream; the split is the same every time', () => {
  const files = [...listTestFiles(), 'zz/new-file.test.ts'].sort((a, b) => a.localeCompare(b));
  const split = partition(files, loadTimings(), 2);
  assert.equal(splitProblems(split, files), []);
  assert.equal(split.filter((s) => s.files.includes('zz/new-file.test.ts')).length, 1);
  assert.equal(partition(files, loadTimings(), 2), split);
});

streams('the split is balanced by the measured seconds: longest first, each to the lighter stream', () => {
  const split = partition(['a.test.ts', 'b.test.ts', 'c.test.ts', 'd.test.ts'], { 'a.test.ts': 10, 'b.test.ts': 6, 'c.test.ts': 5, 'd.test.ts': 1 }, 2);
  assert.equal(
    split.map((s) => [s.files, s.seconds]),
    [
      [['a.test.ts', 'd.test.ts'], 11],
      [['b.test.ts', 'c.test.ts'], 11],
    ],
  );
});

streams('the check finds a file no stream runs, one two streams run, and a pattern wider than its list', () => {
  const files = ['a/x.test.ts', 'a/y.test.ts', 'b/z.test.ts'];
  const stream = (index: number, listed: string[], pattern: string): Stream => ({ index, files: listed, seconds: 0, pattern });
  assert.equal(splitProblems([stream(1, ['a/x.test.ts'], '^a/x\\.test\\.ts$'), stream(2, ['b/z.test.ts'], '^b/z\\.test\\.ts$')], files), ['a/y.test.ts is in no stream: it would never run']);
  const twice = splitProblems([stream(1, ['a/x.test.ts', 'a/y.test.ts'], '^a/'), stream(2, ['a/y.test.ts', 'b/z.test.ts'], '^(a/y|b/z)\\.test\\.ts$')], files);
  assert.equal(twice, ['a/y.test.ts is in streams 1 and 2: it would run 2 times']);
  const wide = splitProblems([stream(1, ['a/x.test.ts'], '^a/'), stream(2, ['b/z.test.ts'], '^b/')], files);
  assert.ok(wide.includes("stream 1's pattern selects a/y.test.ts, which it does not list"), wide.join('; '));
});

streams('the committed timings name only test files that exist', () => {
  const files = new Set(listTestFiles());
  assert.equal(Object.keys(loadTimings()).filter((name) => !files.has(name)), []);
});

streams.run();
