/**
 * The shipped declarations (tools/build/declarations.ts): bundled into a
 * .d.ts per entry point and one shared file, and checked against tsc's
 * per-module files. Here: that the check catches a bundle that drops,
 * renames or changes an exported type, and lets pass what only prints in
 * another order; and that dist/ ships the bundle.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureDist } from '../../tools/build/build.ts';
import { SHARED_CHUNK, type Surface, bundleDeclarations, canonicalType, surfaceChanges, surfacesOf } from '../../tools/build/declarations.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

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
  const surface = (files: Record<string, string>): Surface => surfacesOf(files)[0] as Surface;
  const before = surface(entries);
  assert.equal([...(before.get('a')?.keys() ?? [])].sort(), ['Failure', 'Queue', 'open']);
  assert.equal(surfaceChanges(before, surface(bundled)), []);

  const doctor = async (from: string | RegExp, to: string): Promise<string[]> => {
    await writeFile(path.join(out, 'shared.d.ts'), shared.replace(from, to));
    return surfaceChanges(before, surface(bundled));
  };
  const dropped = await doctor('root: string;', '');
  assert.equal(dropped.map((line) => line.split('\n')[0]), ['a: Queue changed:', 'b: Queue changed:'], 'a member dropped');
  const retyped = await doctor("readonly code: 'A' | 'B';", "readonly code: 'A';");
  assert.equal(retyped.map((line) => line.split('\n')[0]), ['a: Failure changed:', 'b: Failure changed:'], 'a member retyped');
  const undocumented = await doctor('/** Opens one. */', '');
  assert.equal(undocumented.map((line) => line.split('\n')[0]), ['a: open changed:'], 'a comment lost');
  const entryA = await readFile(bundled.a, 'utf8');
  await writeFile(bundled.a, entryA.replace(/\bopen\b/, 'openQueue'));
  const renamed = await doctor(/\bopen\b/g, 'openQueue');
  assert.ok(renamed.includes('a: open is gone') && renamed.includes('a: openQueue is new'), renamed.join('\n'));
});

declarations('dist/ ships one .d.ts per typed entry of package.json\'s exports and the shared one, and no other', async () => {
  await ensureDist({ types: true });
  const manifest = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, string | { types?: string }> };
  const typed = Object.values(manifest.exports).flatMap((target) => (typeof target === 'object' && target.types !== undefined ? [path.relative('dist', target.types)] : []));
  const shipped: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(path.join(ROOT, 'dist', dir), { withFileTypes: true })) {
      const rel = path.join(dir, entry.name);
      if (entry.isDirectory()) await walk(rel);
      else if (entry.name.endsWith('.d.ts')) shipped.push(rel);
    }
  };
  await walk('.');
  assert.equal(shipped.sort(), [...typed, `${SHARED_CHUNK}.d.ts`].sort());
});

declarations.run();
