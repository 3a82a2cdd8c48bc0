/**
 * dist/'s JavaScript: one esbuild build, with code splitting, of every
 * module anything outside loads: the `fsjob` command (bin/fsjob.mts, issue 29
 * point 2), the library's entry points (package.json's exports), the
 * conformance suite's command and the validator's scan worker. Each module
 * of src/ and conformance/ is then in dist/ once, in the one chunk of the
 * entries that reach it (dist/bin/chunks/): the command, the library and the
 * suite share their code rather than ship a copy each, and a few chunks
 * replace some 200 small files, each of which cost a disk block's slack
 * (the install stays under 3 MB, test/package/install.test.ts).
 *
 * Why a bundle for the command: node loads each ES module file on its own
 * (a read, a parse, a link); the CLI and yargs are about 90 files, and
 * loading them cost a start more than everything the command then did.
 * Bundled, `fsjob enqueue` loads a few files: the entry, yargs with
 * main.ts, and the chunks of its command. Each command's code is in chunks
 * of its own (main.ts imports command modules dynamically), so a start
 * loads only its command's; the commands' declarations (options and help)
 * are one chunk, src/cli/commands/declarations.ts, which each command's
 * --help loads with none of the commands' code (its <name>-run.ts, loaded
 * by import() when it runs). `fsjob --version` loads the entry alone.
 *
 * The library's entry points stay where package.json's exports name them
 * (dist/src/producer/index.js, beside its index.d.ts) and import their
 * chunks; a user's bundler follows those imports as it would any module's,
 * and takes from a chunk only what the entry uses. The suite's command is
 * dist/conformance/runner/command.js, which bin/fsjob.mts loads by URL
 * (never bundled into the command's own chunks); the suite's modules find
 * their vectors, C sources and manifest as ../../conformance/... from
 * themselves, which holds for conformance/x/ in the checkout and for
 * dist/conformance/runner/ and dist/bin/chunks/ alike (a check below).
 *
 * write-file-atomic (the CLI's --output reports, src/cli/report-file.ts)
 * and its signal-exit are bundled too, as yargs is, so the package has no
 * run-time dependency to install (they took 208 KB of disk in 43 files for
 * 20 KB of code): they are CommonJS, whose require() of node's modules and
 * __filename an ES module chunk does not have, so each require() of one of
 * node's modules becomes an import of it (below), and __filename is the
 * chunk's. No `require` is made for the chunks (createRequire of
 * import.meta.url): it would shadow the real one in a user's CommonJS
 * bundle of the library, which has no import.meta.url.
 *
 * What stays out of the bundle: the two generated modules (the compiled
 * validators and the schema documents, 0.6 MB), which hold data and
 * functions but no state: every output imports dist/src/records/generated/
 * at its path relative to that output (written in after the build), so
 * they load as files of their own, once. The bundle is minified in its
 * syntax only: names and line breaks stay, so a stack trace still reads,
 * and esbuild's path comments say which source each part is.
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
 * The scan worker of the validator (src/validator/scan-worker.ts) is an
 * entry, dist/bin/chunks/scan-worker.js: scan-pool.ts finds it beside
 * itself, and in the bundle scan-pool.ts is in a chunk (a check below).
 */
import { createHash } from 'node:crypto';
import { chmod, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { brotliCompressSync, constants as zlib } from 'node:zlib';
import { isBuiltin } from 'node:module';
import path from 'node:path';
import { build, transform, type Plugin } from 'esbuild';
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

/** The generated modules: external, under a placeholder that the build replaces in each output by the path from there to dist/src/records/generated/. */
const GENERATED = /(^|[\\/])generated[\\/](validators|documents)\.js$/;
const GENERATED_PLACEHOLDER = 'fsjob-generated:';
const GENERATED_DIR = path.join('src', 'records', 'generated');
const sharedGenerated: Plugin = {
  name: 'shared-generated',
  setup(b) {
    b.onResolve({ filter: GENERATED }, (args) =>
      path.resolve(args.resolveDir, args.path).startsWith(path.join(ROOT, GENERATED_DIR)) ? { path: `${GENERATED_PLACEHOLDER}${path.basename(args.path)}`, external: true } : undefined,
    );
  },
};

/**
 * The start-up script's help-layout.ts: no layout modules. bin/fsjob.mts
 * never runs a command line that asks for help from the script, so yargs
 * there lays out nothing; the plain stand-ins only keep it from failing.
 */
const HELP_LAYOUT_PLAIN = HELP_LAYOUT_BUNDLED.replace(/export async function preloadHelpLayout\(\) \{[^]*?\n\}\n/, 'export async function preloadHelpLayout() {}\n');

/** Where yargs' platform shim asks for the terminal's width. */
const STD_COLUMNS = /stdColumns: typeof process\.stdout\.columns !== 'undefined' \? process\.stdout\.columns : null/;

/** yargs' stand-ins (STAND_INS), and help-layout.ts as `helpLayout`. */
const yargsStandIns = (helpLayout: string): Plugin => ({
  name: 'yargs-stand-ins',
  setup(b) {
    b.onResolve({ filter: /^(cliui|string-width|escalade\/sync|assert)$/ }, (args) =>
      args.importer.startsWith(`${YARGS_DIR}${path.sep}`) ? { path: args.path, namespace: 'yargs-stand-in' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'yargs-stand-in' }, (args) => ({ contents: STAND_INS[args.path], loader: 'js', resolveDir: YARGS_DIR }));
    // yargs' platform shim reads process.stdout.columns when it loads, which makes process.stdout (a stream, ~1.5 ms): the width it
    // gives is for wrapping help, which main.ts turns off (.wrap(null)), and every command paid for it. The shim gets none.
    b.onLoad({ filter: /[\\/]yargs[\\/]lib[\\/]platform-shims[\\/]esm\.mjs$/ }, async (args) => {
      const text = await readFile(args.path, 'utf8');
      const stripped = text.replace(STD_COLUMNS, 'stdColumns: null');
      if (stripped === text) throw new Error(`${args.path}: yargs no longer reads process.stdout.columns as the build expects (STD_COLUMNS); look again`);
      return { contents: stripped, loader: 'js', resolveDir: path.dirname(args.path) };
    });
    // The real layout modules are yargs' dependencies: resolved from its directory.
    b.onLoad({ filter: /[\\/]src[\\/]cli[\\/]help-layout\.ts$/ }, () => ({ contents: helpLayout, loader: 'js', resolveDir: YARGS_DIR }));
  },
});

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

/**
 * The packages bundled (yargs and its parser, the help layout,
 * write-file-atomic) go in minified: their inner workings are no part of
 * an fsjob stack trace worth reading, and their 217 KB of readable code
 * took the install 90 KiB nearer its 3 MB (test/package/install.test.ts).
 * fsjob's own code keeps its names and lines. A package file a plugin
 * before this one loads (yargs' stand-ins) is left to that plugin.
 */
const minifiedPackages: Plugin = {
  name: 'minified-packages',
  setup(b) {
    b.onLoad({ filter: /[\\/]node_modules[\\/].*\.[cm]?js$/ }, async (args) => ({
      contents: (await transform(await readFile(args.path, 'utf8'), { minify: true, loader: 'js', legalComments: 'none', sourcefile: args.path })).code,
      loader: 'js',
      resolveDir: path.dirname(args.path),
    }));
  },
};

/** A require() of one of node's modules in bundled CommonJS: an ES module that imports it (esbuild would leave a require() that an ES module chunk cannot run). */
const builtinRequires: Plugin = {
  name: 'builtin-requires',
  setup(b) {
    b.onResolve({ filter: /^[a-z_:/]+$/ }, (args) => (args.kind === 'require-call' && isBuiltin(args.path) ? { path: args.path.replace(/^node:/, ''), namespace: 'builtin-require' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'builtin-require' }, (args) => ({ contents: `export * from 'node:${args.path}';`, loader: 'js' }));
  },
};

/** The library's entry points: package.json's exports that name code (./dist/src/x/index.js, built from src/x/index.ts). */
async function libraryEntries(): Promise<{ in: string; out: string }[]> {
  const pkg = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, string | { default?: string }> };
  return Object.values(pkg.exports).flatMap((target) => {
    const file = typeof target === 'object' ? target.default : undefined;
    if (file === undefined || !file.endsWith('.js')) return [];
    const out = path.relative('dist', file).replace(/\.js$/, '');
    return [{ in: path.join(ROOT, `${out}.ts`), out }];
  });
}

/**
 * The start-up script's view of the commands' declarations
 * (commands/declarations.ts): it serves only `enqueue` (bin/fsjob.mts hands
 * it nothing else), so it gets enqueue's alone, and the other commands'
 * modules stay out.
 */
const enqueueOnly: Plugin = {
  name: 'enqueue-only',
  setup(b) {
    b.onResolve({ filter: /^\.\/commands\/declarations\.ts$/ }, (args) =>
      args.importer === path.join(ROOT, 'src', 'cli', 'main.ts') ? { path: args.path, namespace: 'enqueue-declarations' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'enqueue-declarations' }, () => ({
      contents: "export { enqueueCommand } from './enqueue.ts';",
      loader: 'js',
      resolveDir: path.join(ROOT, 'src', 'cli', 'commands'),
    }));
    // A built-in imported dynamically (await import('node:readline')) is required, as the script's static imports are: a classic script has no import().
    b.onResolve({ filter: /^[a-z_:/]+$/ }, (args) => (args.kind === 'dynamic-import' && isBuiltin(args.path) ? { path: args.path, namespace: 'builtin-module' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'builtin-module' }, (args) => ({ contents: `module.exports = require(${JSON.stringify(args.path)});`, loader: 'js' }));
  },
};

/** The head and tail that make the script one function expression: a CommonJS module's arguments, and import.meta.url (src/cli/start-cache.ts passes them). */
const SCRIPT_HEAD = '(function (module, require, __filename, __dirname, __fsjobUrl) {';
const SCRIPT_TAIL = '})';

/**
 * The enqueue start-up script (src/cli/start-cache.ts says why): everything
 * `fsjob enqueue` runs, as one classic script, written compressed as
 * bin/enqueue-start.js.br (brotli: 16 KB less than gzip -9 to install). Returns what bin/fsjob.mts is told of it.
 */
async function buildStartScript(out: string, define: Record<string, string>): Promise<StartScriptFacts> {
  const result = await build({
    entryPoints: [path.join(ROOT, 'src', 'cli', 'start-script.ts')],
    absWorkingDir: ROOT,
    bundle: true,
    write: false,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    charset: 'ascii',
    plugins: [enqueueOnly, yargsStandIns(HELP_LAYOUT_PLAIN), minifiedPackages],
    define: { ...define, 'import.meta.url': '__fsjobUrl', 'import.meta.filename': '__filename', 'import.meta.dirname': '__dirname' },
    banner: { js: SCRIPT_HEAD },
    footer: { js: SCRIPT_TAIL },
    minifySyntax: true,
    logLevel: 'warning',
    metafile: true,
  });
  const text = result.outputFiles[0]?.contents;
  if (text === undefined) throw new Error('the enqueue start-up script: esbuild wrote nothing');
  const source = Buffer.from(text).toString('latin1');
  if (!/^[\x00-\x7f]*$/.test(source)) throw new Error('the enqueue start-up script is not ASCII (src/cli/start-cache.ts decodes it as latin1)');
  const required = [...source.matchAll(/\brequire\("([^"]+)"\)/g)].map((match) => match[1] as string).filter((id) => !isBuiltin(id));
  if (required.length > 0) throw new Error(`the enqueue start-up script requires ${required.join(', ')}, which are not node's: bundle them`);
  if (/\bimport\(/.test(source.replace(/\/\/.*$/gm, ''))) throw new Error('the enqueue start-up script calls import(), which a classic script run by vm.Script cannot');
  if (HELP_LAYOUT_PLAIN === HELP_LAYOUT_BUNDLED) throw new Error('HELP_LAYOUT_PLAIN: the pattern no longer finds preloadHelpLayout in HELP_LAYOUT_BUNDLED');
  const strays = Object.keys(result.metafile.inputs).filter((input) => /^src\/(consumer|validator)\/|^conformance\/|generated\/validators\.js$|records\/compiled\.ts$|node_modules\/(cliui|string-width|wrap-ansi|emoji-regex)\//.test(input));
  if (strays.length > 0) throw new Error(`the enqueue start-up script holds ${strays.join(', ')}: enqueue never needs them`);
  await mkdir(path.join(out, 'bin'), { recursive: true });
  const compressed = brotliCompressSync(text, { params: { [zlib.BROTLI_PARAM_QUALITY]: zlib.BROTLI_MAX_QUALITY, [zlib.BROTLI_PARAM_SIZE_HINT]: text.length } });
  await writeFile(path.join(out, 'bin', 'enqueue-start.js.br'), compressed);
  return { name: 'enqueue', hash: createHash('sha256').update(text).digest('hex').slice(0, 16), bytes: text.length };
}

interface StartScriptFacts {
  name: string;
  hash: string;
  bytes: number;
}

/**
 * dist/.chunk-sources.json (not shipped: package.json's "files"): the
 * sources each output of the split build holds, by its path under dist/,
 * from esbuild's metafile. Tests read it to tell what a start loaded
 * (test/cli/start-up.test.ts), also from the suite's chunks, which lose
 * esbuild's path comments with their whitespace (withoutWhitespace).
 */
export const CHUNK_SOURCES = '.chunk-sources.json';

function chunkSources(out: string, outputs: Readonly<Record<string, { inputs: Record<string, unknown> }>>): Record<string, string[]> {
  return Object.fromEntries(Object.entries(outputs).map(([output, { inputs }]) => [path.relative(out, path.resolve(ROOT, output)), Object.keys(inputs).sort()]));
}

/** Whether a chunk holds the conformance suite's code alone (its cases and runner: ~430 KB). */
function suiteOnly(inputs: readonly string[]): boolean {
  return inputs.length > 0 && inputs.every((input) => /(^|\/)conformance\//.test(input));
}

/**
 * The suite's chunk without its whitespace: 60 KB less to install (the
 * install stays under 3 MB beside the enqueue start-up script,
 * test/package/install.test.ts), at the price of line numbers in a stack
 * trace of the suite's own code, which is read from the checkout's
 * sources (conformance/), not from an install. Names stay.
 */
async function withoutWhitespace(file: string, text: string): Promise<string> {
  return (await transform(text, { minifyWhitespace: true, format: 'esm', loader: 'js', sourcefile: file, legalComments: 'none' })).code;
}

/**
 * dist/bin/fsjob.js, the command's entry (bin/fsjob.mts says why it is a
 * CommonJS script): bundled alone, with what it imports (the start-up
 * checks and cache), and main.ts as the chunk the split build made of it,
 * dist/bin/chunks/main.js, loaded by import(). Two package.json files say
 * which is which: "commonjs" for dist/bin/, "module" for dist/bin/chunks/
 * (the package's own says "module").
 */
async function buildEntry(out: string, define: Record<string, string>): Promise<void> {
  const bin = path.join(out, 'bin');
  const mainChunk: Plugin = {
    name: 'main-chunk',
    setup(b) {
      b.onResolve({ filter: /^\.\.\/src\/cli\/main\.ts$/ }, () => ({ path: './chunks/main.js', external: true }));
    },
  };
  const entry = path.join(bin, 'fsjob.js');
  await build({
    entryPoints: [path.join(ROOT, 'bin', 'fsjob.mts')],
    outfile: entry,
    absWorkingDir: ROOT,
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    plugins: [mainChunk],
    define: { ...define, 'import.meta.url': '__fsjobEntryUrl' },
    banner: { js: 'const __fsjobEntryUrl = require("node:url").pathToFileURL(__filename).href;' },
    minifySyntax: true,
    logLevel: 'warning',
  });
  const text = await readFile(entry, 'utf8');
  if (!text.startsWith('#!')) throw new Error(`${entry}: the bundle lost the entry's #! line`);
  const required = [...text.matchAll(/\brequire\("([^"]+)"\)/g)].map((match) => match[1] as string).filter((id) => !isBuiltin(id));
  if (required.length > 0) throw new Error(`${entry} requires ${required.join(', ')}: it bundles what it needs and imports the CLI's chunks`);
  await writeFile(path.join(bin, 'package.json'), `${JSON.stringify({ type: 'commonjs' })}\n`);
  await writeFile(path.join(bin, 'chunks', 'package.json'), `${JSON.stringify({ type: 'module' })}\n`);
  await chmod(entry, 0o755);
}

/**
 * Builds dist/'s JavaScript into `out`: bin/fsjob.js, bin/chunks/, the
 * library's entry points under src/ and conformance/runner/command.js,
 * and the enqueue start-up script.
 */
export async function buildBundle(out: string, define: Record<string, string>): Promise<void> {
  const bin = path.join(out, 'bin');
  const startScript = await buildStartScript(out, define);
  const result = await build({
    entryPoints: [
      { in: path.join(ROOT, 'src', 'cli', 'main.ts'), out: 'bin/chunks/main' },
      { in: path.join(ROOT, 'src', 'validator', 'scan-worker.ts'), out: 'bin/chunks/scan-worker' },
      { in: path.join(ROOT, 'conformance', 'runner', 'command.ts'), out: 'conformance/runner/command' },
      ...(await libraryEntries()),
    ],
    outdir: out,
    absWorkingDir: ROOT,
    chunkNames: 'bin/chunks/[name]-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    plugins: [sharedGenerated, yargsStandIns(HELP_LAYOUT_BUNDLED), builtinRequires, minifiedPackages],
    // Bundled CommonJS (write-file-atomic names its temp files after __filename) gets what node gives a CommonJS module, for its chunk.
    define: { ...define, __filename: 'import.meta.filename', __dirname: 'import.meta.dirname' },
    minifySyntax: true,
    logLevel: 'warning',
    metafile: true,
  });
  // FSJOB_CLI_METAFILE=FILE keeps esbuild's account of what went into which chunk (to see what a command loads).
  const metafileAt = process.env['FSJOB_CLI_METAFILE'];
  if (metafileAt !== undefined) await writeFile(metafileAt, JSON.stringify(result.metafile));
  await writeFile(path.join(out, CHUNK_SOURCES), JSON.stringify(chunkSources(out, result.metafile.outputs)));
  await writeFile(path.join(bin, 'THIRD-PARTY-LICENSES.txt'), await licensesOf(Object.keys(result.metafile.inputs)));
  for (const [output, { inputs }] of Object.entries(result.metafile.outputs)) {
    const file = path.resolve(ROOT, output);
    let text = await readFile(file, 'utf8');
    if (suiteOnly(Object.keys(inputs))) text = await withoutWhitespace(file, text);
    const depth = path.relative(out, path.dirname(file)).split(path.sep).length;
    if (/["'`]\.\.\/\.\.\/conformance\//.test(text) && depth !== 2) throw new Error(`${file} finds the suite's files as ../../conformance/, which holds two levels below dist/ only`);
    if (text.includes('"./scan-worker.js"') && path.dirname(file) !== path.join(bin, 'chunks')) throw new Error(`${file} starts ./scan-worker.js, which is in dist/bin/chunks/`);
    const generated = path.relative(path.dirname(file), path.join(out, GENERATED_DIR));
    if (/\b__require\(/.test(text)) throw new Error(`${file} calls require(), which an ES module has not: bundle what it requires (builtinRequires)`);
    await writeFile(file, text.replaceAll(`"${GENERATED_PLACEHOLDER}`, `"${generated.startsWith('.') ? generated : `./${generated}`}/`));
  }
  // As the text of its JSON: an object given to define would become a module of its own.
  await buildEntry(out, { ...define, __FSJOB_START_SCRIPT: JSON.stringify(JSON.stringify(startScript)) });
}
