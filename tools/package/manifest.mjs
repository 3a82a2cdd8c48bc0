// The package.json that ships: this repository's, without `scripts`.
//
//   node tools/package/manifest.mjs strip     (npm's prepack)
//   node tools/package/manifest.mjs restore   (npm's postpack)
//
// The repository's `prepare` builds dist/ when `npm ci` runs here (it needs
// tsx and tools/, which are not shipped). Shipped, npm would count it an
// install script of the package and warn on every install of the tarball;
// the other scripts only work in a checkout. npm packs package.json as it is
// on disk after prepack, and offers no separate publish manifest (npm's
// publishConfig does not cover scripts), so prepack writes the manifest
// without `scripts` and postpack puts the repository's back, byte for byte,
// from a copy kept beside it. A pack that died between the two leaves that
// copy: the next strip or restore puts it back first, so the repository's
// manifest is never lost. Plain JavaScript: it runs before anything is built.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MANIFEST = join(ROOT, 'package.json');
/** The repository's own package.json while a pack runs (ignored by git, never packed: `files` does not name it). */
export const KEPT = join(ROOT, '.package.json.repository');

/** The shipped form of a manifest's text: the same JSON without `scripts`, in npm's layout (two spaces, a final newline). */
export function shippedManifest(text) {
  const { scripts: _scripts, ...shipped } = JSON.parse(text);
  return `${JSON.stringify(shipped, null, 2)}\n`;
}

function restore() {
  if (existsSync(KEPT)) renameSync(KEPT, MANIFEST);
}

const [action] = process.argv.slice(2);
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (action === 'strip') {
    restore();
    const text = readFileSync(MANIFEST, 'utf8');
    writeFileSync(KEPT, text);
    writeFileSync(`${MANIFEST}.shipped`, shippedManifest(text));
    renameSync(`${MANIFEST}.shipped`, MANIFEST);
  } else if (action === 'restore') {
    restore();
  } else {
    process.stderr.write('usage: node tools/package/manifest.mjs strip|restore\n');
    process.exitCode = 2;
  }
}
