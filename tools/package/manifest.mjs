// The package.json and README.md that ship: this repository's, package.json
// without `scripts`, README.md without links to files the package does not
// hold.
//
//   node tools/package/manifest.mjs strip     (npm's prepack)
//   node tools/package/manifest.mjs restore   (npm's postpack)
//
// The repository's `prepare` builds dist/ when `npm ci` runs here (it needs
// tsx and tools/, which are not shipped). Shipped, npm would count it an
// install script of the package and warn on every install of the tarball;
// the other scripts only work in a checkout. README.md links to the spec,
// the benchmarks and the other implementations, which stay in the
// repository (the package holds dist/ and schemas/: `files`); in the
// package such a link would lead nowhere, so it becomes the path it names
// in the repository, as text.
//
// npm packs both files as they are on disk after prepack, and offers no
// separate publish manifest (npm's publishConfig does not cover scripts),
// so prepack writes the shipped forms and postpack puts the repository's
// back, byte for byte, from a copy kept beside each. A pack that died
// between the two leaves that copy: the next strip or restore puts it back
// first, so the repository's file is never lost. Plain JavaScript: it runs
// before anything is built.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MANIFEST = join(ROOT, 'package.json');

/** The shipped form of a manifest's text: the same JSON without `scripts`, in npm's layout (two spaces, a final newline). */
export function shippedManifest(text) {
  const { scripts: _scripts, ...shipped } = JSON.parse(text);
  return `${JSON.stringify(shipped, null, 2)}\n`;
}

/** Whether the package holds `target` (a path relative to the root): under a folder `files` names, and there in the checkout. */
function shipped(target, files) {
  const top = target.split('/')[0];
  return files.some((entry) => !entry.startsWith('!') && entry === top) && existsSync(join(ROOT, target));
}

/**
 * The shipped form of README.md's text: a relative link whose file the
 * package does not hold (`files`, given) becomes the path it names, `in
 * the fsjob repository`; links to anchors, to other sites and to shipped files stay.
 */
export function shippedReadme(text, files) {
  return text.replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (whole, label, target) => {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#')) return whole;
    const path = target.split('#')[0];
    if (shipped(path, files)) return whole;
    // A label that names the path (spec/ for spec/README.md) gives way to the path; another keeps it.
    return path.startsWith(label.replaceAll('`', '')) ? `${path} in the fsjob repository` : `${label} (${path} in the fsjob repository)`;
  });
}

/** Each file that ships in another form, with the copy of the repository's kept beside it while a pack runs (ignored by git, never packed: `files` does not name it). */
export const SHIPPED = [
  { file: MANIFEST, kept: join(ROOT, '.package.json.repository'), shipped: (text) => shippedManifest(text) },
  { file: join(ROOT, 'README.md'), kept: join(ROOT, '.README.md.repository'), shipped: (text) => shippedReadme(text, JSON.parse(readFileSync(MANIFEST, 'utf8')).files) },
];

function restore() {
  for (const { file, kept } of SHIPPED) if (existsSync(kept)) renameSync(kept, file);
}

const [action] = process.argv.slice(2);
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (action === 'strip') {
    restore();
    // README.md first: its form reads `files` from the repository's package.json.
    for (const { file, kept, shipped: form } of [...SHIPPED].reverse()) {
      const text = readFileSync(file, 'utf8');
      writeFileSync(kept, text);
      writeFileSync(`${file}.shipped`, form(text));
      renameSync(`${file}.shipped`, file);
    }
  } else if (action === 'restore') {
    restore();
  } else {
    process.stderr.write('usage: node tools/package/manifest.mjs strip|restore\n');
    process.exitCode = 2;
  }
}
