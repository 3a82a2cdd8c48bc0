// What dist/ is built from, and whether the dist/ of this checkout is
// current. Plain JavaScript: bin/fsjob.js (the command in a checkout) asks
// this on every start, before any TypeScript loader exists.
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const DIST = join(ROOT, 'dist');

/**
 * Directories compiled or copied into dist/ whole, and single input files:
 * every tools/build/ script whose code shapes what dist/ holds is one (a
 * change to it must make dist/ stale, as a change to src/ does).
 */
export const INPUT_DIRS = ['src', 'conformance/runner', 'conformance/cases', 'conformance/crash', 'conformance/vectors', 'conformance/impls/reference'];
export const INPUT_FILES = ['bin/fsjob.mts', 'tools/build/build.ts', 'tools/build/cli-bundle.ts', 'tools/build/declarations.ts', 'tools/build/sh-comments.ts', 'tools/build/inputs.mjs'];

/** dist/.source-key holds the sourceKey() its JavaScript was built from; dist/.types-key the one of its .d.ts files. */
export const JS_KEY = '.source-key';
export const TYPES_KEY = '.types-key';

/**
 * A digest naming every input: each file's path, inode, size and change time
 * (any write changes the ctime, a checkout makes new inodes), node's major
 * version, and the package's version (the one thing of package.json the
 * build writes in: `npm pack` rewrites package.json, tools/package/manifest.mjs,
 * and that must not make dist/ stale). Statting the ~200 inputs costs about
 * a millisecond; hashing their contents would cost every start ~15 ms.
 */
export function sourceKey() {
  const hash = createHash('sha256');
  hash.update(`${process.versions.node.split('.')[0]}\0`);
  hash.update(`${JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version}\0`);
  const add = (path) => {
    const { ino, size, ctimeNs } = statSync(path, { bigint: true });
    hash.update(`${relative(ROOT, path)}\0${ino}\0${size}\0${ctimeNs}\0`);
  };
  const walk = (dir) => {
    const entries = readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) add(path);
    }
  };
  for (const dir of INPUT_DIRS) walk(join(ROOT, dir));
  for (const file of INPUT_FILES) add(join(ROOT, file));
  return hash.digest('hex').slice(0, 32);
}

/** The key dist/ says it was built from (JS_KEY or TYPES_KEY), or undefined. */
export function builtKey(which = JS_KEY) {
  try {
    return readFileSync(join(DIST, which), 'utf8');
  } catch {
    return undefined;
  }
}

/** True when dist/ holds JavaScript built from the sources as they are now. */
export function distIsCurrent(which = JS_KEY) {
  const built = builtKey(which);
  return built !== undefined && built === sourceKey();
}
