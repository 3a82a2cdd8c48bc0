/**
 * The shipped declarations (tools/build/declarations.ts): bundled into a
 * .d.ts per entry point and one shared file, and checked against tsc's
 * per-module files. Here: that the check catches a bundle that drops,
 * renames or changes an exported type, and lets pass what only prints in
 * another order (test/package/install.test.ts: the tarball ships the bundle).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type Surface, bundleDeclarations, canonicalType, surfaceChanges, surfacesOf } from '../../tools/build/declarations.ts';

const declarations = suite('the bundled declarations');

let work = '';
declarations.before(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'fsjob-declarations-'));
});
declarations.after(async () => {
  if (work !== '') await rm(work, { recursive: true, force: true });
});

declarations('a printed type is canonical up to the order of union, intersection and object members, and nothing else', () => {
  assert.is(canonicalType('{ b?: "y" | "x" | undefined; a: Array<2 | 1>; }'), canonicalType('{ a: Array<1 | 2>; b?: "x" | "y" | undefined; }'));
  assert.is(canonicalType('(value: string) => value is "b" | "a"'), canonicalType('(value: string) => value is "a" | "b"'));
  assert.is(canonicalType('Map<(x: B | A) => void, C & D>'), canonicalType('Map<(x: A | B) => void, D & C>'));
  assert.is.not(canonicalType('{ a: 1; b?: 2; }'), canonicalType('{ a: 1; b: 2; }'));
  assert.is.not(canonicalType('Array<"a | b">'), canonicalType('Array<"b | a">'), 'a string literal is no union');
  assert.is.not(canonicalType('(a: A) => B | C'), canonicalType('(a: A | B) => C'));
});

/** tsc-like per-module declarations of two entries that share a class and an interface. */
async function modules(dir: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {
    'errors.d.ts': `/** An error. */\nexport declare class Failure extends Error {\n  #private;\n  /** Its code. */\n  readonly code: 'A' | 'B';\n}\n`,
    'queue.d.ts': `import type { Failure } from './errors.js';\n/** A queue. */\nexport interface Queue {\n  /** Where. */\n  root: string;\n  last?: Failure;\n}\n/** Opens one. */\nexport declare function open(root: string): Promise<Queue>;\n`,
    'a.d.ts': `export { Failure } from './errors.js';\nexport { open, type Queue } from './queue.js';\n`,
    'b.d.ts': `export { Failure } from './errors.js';\nexport type { Queue } from './queue.js';\n`,
  };
  for (const [name, text] of Object.entries(files)) await writeFile(path.join(dir, name), text);
  return { a: path.join(dir, 'a.d.ts'), b: path.join(dir, 'b.d.ts') };
}

declarations('the bundle declares each type once, in the shared file, with the surface of the per-module files; a dropped, renamed or changed export fails the check', async () => {
  const source = await mkdtemp(path.join(work, 'tsc-'));
  const out = await mkdtemp(path.join(work, 'bundle-'));
  const entries = await modules(source);
  const written = (await bundleDeclarations(entries, out, 'shared')).map((file) => path.relative(out, file)).sort();
  assert.equal(written, ['a.d.ts', 'b.d.ts', 'shared.d.ts']);
  const bundled = { a: path.join(out, 'a.d.ts'), b: path.join(out, 'b.d.ts') };
  const shared = await readFile(path.join(out, 'shared.d.ts'), 'utf8');
  assert.is(shared.match(/declare class Failure/g)?.length, 1, shared);
  assert.match(shared, '/** Its code. */');
  // The bundle as built, and four spoilt copies of it; one program reads them all.
  const spoilt = async (name: string, edit: (file: 'a.d.ts' | 'b.d.ts' | 'shared.d.ts', text: string) => string): Promise<Record<string, string>> => {
    const dir = path.join(work, name);
    await mkdir(dir);
    for (const file of ['a.d.ts', 'b.d.ts', 'shared.d.ts'] as const) await writeFile(path.join(dir, file), edit(file, await readFile(path.join(out, file), 'utf8')));
    return { a: path.join(dir, 'a.d.ts'), b: path.join(dir, 'b.d.ts') };
  };
  const inShared = (from: string, to: string) => (file: string, text: string): string => (file === 'shared.d.ts' ? text.replace(from, to) : text);
  const variants = [
    bundled,
    await spoilt('dropped', inShared('root: string;', '')),
    await spoilt('retyped', inShared("readonly code: 'A' | 'B';", "readonly code: 'A';")),
    await spoilt('undocumented', inShared('/** Opens one. */', '')),
    await spoilt('renamed', (file, text) => (file === 'b.d.ts' ? text : text.replace(/\bopen\b/g, 'openQueue'))),
  ];
  const [before, same, dropped, retyped, undocumented, renamed] = surfacesOf(entries, ...variants) as [Surface, Surface, Surface, Surface, Surface, Surface];
  assert.equal([...(before.get('a')?.keys() ?? [])].sort(), ['Failure', 'Queue', 'open']);
  assert.equal(surfaceChanges(before, same), []);
  const heads = (after: Surface): string[] => surfaceChanges(before, after).map((change) => change.split('\n')[0] as string);
  assert.equal(heads(dropped), ['a: Queue changed:', 'b: Queue changed:'], 'a member dropped');
  assert.equal(heads(retyped), ['a: Failure changed:', 'b: Failure changed:'], 'a member retyped');
  assert.equal(heads(undocumented), ['a: open changed:'], 'a comment lost');
  assert.equal(heads(renamed), ['a: open is gone', 'a: openQueue is new'], 'an export renamed');
});

declarations.run();
