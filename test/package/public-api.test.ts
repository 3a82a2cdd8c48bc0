/**
 * The public API: what package.json's `exports` name, and that every name
 * those entry points export carries a TSDoc comment (the editor shows it,
 * and the .d.ts files ship it).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface Manifest {
  exports: Record<string, string | { types: string; default: string }>;
  bin: Record<string, string>;
  files: string[];
}

const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Manifest;

/** The source module of each code entry point: ./dist/src/x/index.js -> src/x/index.ts. */
function entryModules(): Map<string, string> {
  const out = new Map<string, string>();
  for (const [name, target] of Object.entries(manifest.exports)) {
    if (typeof target === 'string') continue;
    assert.is(target.types.replace(/\.d\.ts$/, ''), target.default.replace(/\.js$/, ''), `${name}: types and code are one module`);
    out.set(name, target.default.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts'));
  }
  return out;
}

const api = suite('the public API');

api('every code entry point of exports is a module of src/, types beside code; the schemas and the bin exist', () => {
  const entries = entryModules();
  assert.equal([...entries.keys()], ['.', './producer', './consumer', './validator', './schemas']);
  for (const source of entries.values()) assert.ok(existsSync(join(ROOT, source)), source);
  assert.is(manifest.exports['./schemas/*.json'], './schemas/*.json');
  assert.equal(manifest.bin, { fsjob: 'dist/bin/fsjob.js' });
  assert.ok(existsSync(join(ROOT, 'bin', 'fsjob.mts')), 'the source of dist/bin/fsjob.js');
});

api('every name an entry point exports has a TSDoc comment', () => {
  const entries = [...entryModules().values()].map((source) => join(ROOT, source));
  const program = ts.createProgram(entries, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    allowImportingTsExtensions: true,
    noEmit: true,
    strict: true,
    types: ['node'],
  });
  const checker = program.getTypeChecker();
  const undocumented: string[] = [];
  let names = 0;
  for (const entry of entries) {
    const file = program.getSourceFile(entry);
    const module = file === undefined ? undefined : checker.getSymbolAtLocation(file);
    assert.ok(module !== undefined, entry);
    for (const symbol of checker.getExportsOfModule(module)) {
      names += 1;
      const target = (symbol.flags & ts.SymbolFlags.Alias) !== 0 ? checker.getAliasedSymbol(symbol) : symbol;
      if (ts.displayPartsToString(target.getDocumentationComment(checker)).trim() === '') {
        const where = target.declarations?.[0]?.getSourceFile().fileName;
        undocumented.push(`${symbol.name} (${where === undefined ? '?' : relative(ROOT, where)})`);
      }
    }
  }
  assert.ok(names > 100, `${names} exported names`);
  assert.equal([...new Set(undocumented)].sort(), []);
});

api.run();
