/**
 * Small modules (the project's standard): no source file of src/, tools/,
 * bin/ or bench/ over 500 lines, generated code excepted (it is written by
 * tools/gen/ from schemas/ and read by nobody).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const LIMIT = 500;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'generated' || entry.name === 'node_modules' || entry.name === 'results' ? [] : sources(path);
    return /\.(ts|mts|js|mjs|cjs|sh|c)$/.test(entry.name) ? [path] : [];
  });
}

const sizes = suite('module sizes');

sizes(`no source file of src/, tools/, bin/ or bench/ is over ${LIMIT} lines (generated code excepted)`, () => {
  const files = ['src', 'tools', 'bin', 'bench'].flatMap((dir) => sources(join(ROOT, dir)));
  assert.ok(files.length > 50, `found ${files.length} files`);
  const long = files
    .map((file) => ({ file: relative(ROOT, file), lines: readFileSync(file, 'utf8').split('\n').length - 1 }))
    .filter(({ lines }) => lines > LIMIT)
    .map(({ file, lines }) => `${file}: ${lines} lines`);
  assert.equal(long, []);
});

sizes.run();
