/**
 * The `fsjob` command as users run it: bin/fsjob.ts and the CLI bundled by
 * esbuild into dist/bin/fsjob.js and dist/bin/chunks/ (issue 29 point 2).
 *
 * Why a bundle: node loads each ES module file on its own (a read, a parse,
 * a link); the CLI and yargs are about 90 files, and loading them cost a
 * start more than everything the command then did. Bundled, `fsjob
 * enqueue` loads a few files: the entry, yargs with main.ts, and the chunk
 * of its command. Each command's code is a chunk of its own (main.ts
 * imports command modules dynamically), so a start loads only its
 * command's. `fsjob --version` loads the entry alone.
 *
 * What stays out of the bundle: write-file-atomic (a CommonJS dependency,
 * imported from node_modules as the library does); the conformance suite,
 * which bin/fsjob.ts loads from dist/conformance/ beside the command (its
 * cases find their vectors and C sources beside themselves); and the two
 * generated modules (the compiled validators and the schema documents,
 * 0.7 MB of the bundle's 1.7 MB), which hold data and functions but no
 * state, so the chunks import the copies dist/src/ has anyway. The bundle
 * is minified in its whitespace and syntax only: names stay, so a stack
 * trace still reads.
 *
 * yargs, with three stand-ins, each because a start paid for it without
 * needing it:
 * - cliui and string-width, which lay out help (their Unicode tables and a
 *   grapheme segmenter cost a start about 20 ms): yargs gets stand-ins that
 *   call the real modules, which src/cli/help-layout.ts (replaced here by
 *   the module below) loads when argv asks for help. Without them loaded
 *   (help yargs shows on its own, which main.ts never lets it) the
 *   stand-ins lay text out plainly rather than fail.
 * - escalade's findUp, with which yargs looks for a package.json above the
 *   command to guess a version and read parser settings from: fsjob names
 *   its version and settings itself, and a user's package.json has no say
 *   in how fsjob parses its arguments. The stand-in finds nothing.
 * - node:assert, which yargs imports for two internal checks and whose
 *   loading opens standard error: the stand-in checks the same and throws.
 *
 * The scan worker of the validator (src/validator/scan-worker.ts) is a
 * second entry, dist/bin/chunks/scan-worker.js: scan-pool.ts finds it
 * beside itself, and in the bundle scan-pool.ts is in a chunk.
 */
import { chmod, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { build, type Plugin } from 'esbuild';
import { ROOT } from './inputs.mjs';

const YARGS_DIR = path.join(ROOT, 'node_modules', 'yargs');
const HELP_LAYOUT = path.join(ROOT, 'src', 'cli', 'help-layout.ts');

/** The bundle's src/cli/help-layout.ts: loads the real layout modules when help is to be shown; stand-ins for yargs. */
const HELP_LAYOUT_BUNDLED = `
let layout;
export async function preloadHelpLayout() {
  if (layout !== undefined) return;
  const [cliui, stringWidth] = await Promise.all([import('cliui'), import('string-width')]);
  layout = { cliui: cliui.default, stringWidth: stringWidth.default };
}
/** cliui's interface, plainly: each row's cells joined by two spaces. */
function plainColumns() {
  const rows = [];
  const text = (cell) => (typeof cell === 'string' ? cell : String(cell.text ?? ''));
  return {
    div(...cells) { rows.push(cells.map(text).join('  ')); },
    span(...cells) { rows.push(cells.map(text).join('  ')); },
    resetOutput() { rows.length = 0; },
    toString() { return rows.join('\\n'); },
  };
}
export function cliuiStandIn(options) { return layout === undefined ? plainColumns(options) : layout.cliui(options); }
export function stringWidthStandIn(text) { return layout === undefined ? String(text).length : layout.stringWidth(text); }
`;

/** What yargs imports, and the stand-in it gets in the bundle. */
const STAND_INS: Readonly<Record<string, string>> = {
  cliui: `export { cliuiStandIn as default } from ${JSON.stringify(HELP_LAYOUT)};`,
  'string-width': `export { stringWidthStandIn as default } from ${JSON.stringify(HELP_LAYOUT)};`,
  'escalade/sync': 'export default function findUp() { return undefined; }',
  assert: [
    'export function strictEqual(actual, expected, message) { if (actual !== expected) throw new Error(message ?? `${String(actual)} !== ${String(expected)}`); }',
    'export function notStrictEqual(actual, expected, message) { if (actual === expected) throw new Error(message ?? `${String(actual)} === ${String(expected)}`); }',
  ].join('\n'),
};

export /** The generated modules, imported from dist/src/ (every chunk is in dist/bin/chunks/, two levels below dist/). */
const GENERATED = /(^|[\\/])generated[\\/](validators|documents)\.js$/;
const sharedGenerated: Plugin = {
  name: 'shared-generated',
  setup(b) {
    b.onResolve({ filter: GENERATED }, (args) =>
      path.resolve(args.resolveDir, args.path).startsWith(path.join(ROOT, 'src', 'records', 'generated'))
        ? { path: `../../src/records/generated/${path.basename(args.path)}`, external: true }
        : undefined,
    );
  },
};

const yargsStandIns: Plugin = {
  name: 'yargs-stand-ins',
  setup(b) {
    b.onResolve({ filter: /^(cliui|string-width|escalade\/sync|assert)$/ }, (args) =>
      args.importer.startsWith(`${YARGS_DIR}${path.sep}`) ? { path: args.path, namespace: 'yargs-stand-in' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'yargs-stand-in' }, (args) => ({ contents: STAND_INS[args.path], loader: 'js', resolveDir: YARGS_DIR }));
    // The real layout modules are yargs' dependencies: resolved from its directory.
    b.onLoad({ filter: /[\\/]src[\\/]cli[\\/]help-layout\.ts$/ }, () => ({ contents: HELP_LAYOUT_BUNDLED, loader: 'js', resolveDir: YARGS_DIR }));
  },
};

/** The licence of each package of node_modules that went into the bundle (its LICENSE file, as the package ships it). */
async function licensesOf(inputs: readonly string[]): Promise<string> {
  const packages = new Set<string>();
  for (const input of inputs) {
    const match = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (match !== null) packages.add(match[1] as string);
  }
  const parts = ['The fsjob command (dist/bin/) bundles these packages; each is distributed under its own licence, as follows.\n'];
  for (const dir of [...packages].sort()) {
    const at = path.join(ROOT, dir);
    const { name, version, license } = JSON.parse(await readFile(path.join(at, 'package.json'), 'utf8')) as { name: string; version: string; license?: string };
    const file = (await readdir(at)).find((entry) => /^licen[cs]e([-.][a-z0-9.-]*)?$/i.test(entry));
    if (file === undefined) throw new Error(`${dir} has no LICENSE file to ship with the bundle`);
    parts.push(`${'='.repeat(72)}\n${name}@${version} (${license ?? 'see below'})\n\n${(await readFile(path.join(at, file), 'utf8')).trim()}\n`);
  }
  return parts.join('\n');
}

/** Builds the command into `<out>/bin/`: fsjob.js and chunks/. */
export async function buildCli(out: string, define: Record<string, string>): Promise<void> {
  const bin = path.join(out, 'bin');
  const result = await build({
    entryPoints: [
      { in: path.join(ROOT, 'bin', 'fsjob.ts'), out: 'fsjob' },
      { in: path.join(ROOT, 'src', 'validator', 'scan-worker.ts'), out: 'chunks/scan-worker' },
    ],
    outdir: bin,
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: ['write-file-atomic'],
    plugins: [sharedGenerated, yargsStandIns],
    define,
    minifySyntax: true,
    logLevel: 'warning',
    metafile: true,
  });
  // FSJOB_CLI_METAFILE=FILE keeps esbuild's account of what went into which chunk (to see what a command loads).
  const metafileAt = process.env['FSJOB_CLI_METAFILE'];
  if (metafileAt !== undefined) await writeFile(metafileAt, JSON.stringify(result.metafile));
  await writeFile(path.join(bin, 'THIRD-PARTY-LICENSES.txt'), await licensesOf(Object.keys(result.metafile.inputs)));
  const entry = path.join(bin, 'fsjob.js');
  const text = await readFile(entry, 'utf8');
  if (!text.startsWith('#!')) throw new Error(`${entry}: the bundle lost the entry's #! line`);
  // The path sharedGenerated writes holds from chunks/ only.
  if (text.includes('records/generated/')) throw new Error(`${entry} imports a generated module: move that import behind a dynamic one (a chunk)`);
  await chmod(entry, 0o755);
}
