/**
 * The shape of src/ (issue 15): no module imports itself back through
 * others (a cycle, type imports included), and the folders form layers, each
 * importing only those below it:
 *
 *   base < fs < records < model < producer | consumer | validator < cli
 *
 * The three roles never import each other. Nothing in src/ reaches outside
 * it (issue 29 point 5): `fsjob conformance` is the suite's own command
 * (conformance/runner/command.ts), which bin/fsjob.mts hands the CLI. src/index.ts,
 * the package's `fsjob` entry point, is the producer and the consumer together.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SRC = join(ROOT, 'src');

const BELOW: Readonly<Record<string, readonly string[]>> = {
  base: [],
  fs: ['base'],
  records: ['base', 'fs'],
  model: ['base', 'fs', 'records'],
  producer: ['base', 'fs', 'records', 'model'],
  consumer: ['base', 'fs', 'records', 'model'],
  validator: ['base', 'fs', 'records', 'model'],
  cli: ['base', 'fs', 'records', 'model', 'producer', 'consumer', 'validator'],
  'index.ts': ['producer', 'consumer'],
};

function modules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return modules(path);
    return /\.(ts|mts|mjs|cjs)$/.test(entry.name) ? [relative(ROOT, path)] : [];
  });
}

/** Every relative specifier a module imports or re-exports, statically or with import(), as a path from the repository root. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const specifiers = [...text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'";]*?\bfrom\s+'(\.[^']+)'|(?:^|\n)\s*import\s+'(\.[^']+)'|\bimport\(\s*'(\.[^']+)'\s*\)|\brequire\(\s*'(\.[^']+)'\s*\)/g)].map((m) => m[1] ?? m[2] ?? m[3] ?? m[4] ?? '');
  return specifiers.map((spec) => normalize(join(dirname(file), spec)));
}

const graph = new Map(modules(SRC).map((file) => [file, importsOf(file)]));

/** The strongly connected components of more than one module (Tarjan). */
function cycles(): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string | undefined;
      do {
        w = stack.pop();
        if (w === undefined) break;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

const imports = suite('imports of src/');

imports('the import graph is read: every src folder has modules and the graph has edges', () => {
  const folders = new Set([...graph.keys()].map((file) => file.split('/')[1]));
  for (const folder of Object.keys(BELOW)) assert.ok(folders.has(folder), `src/${folder} has modules`);
  assert.ok([...graph.values()].flat().length > 200, 'the graph has edges');
});

imports('no import cycle among the modules of src/ (type imports included)', () => {
  assert.equal(cycles(), []);
});

imports('each folder imports only the layers below it; the roles never import each other', () => {
  const wrong: string[] = [];
  for (const [file, targets] of graph) {
    const from = file.split('/')[1] ?? '';
    for (const target of targets) {
      const [top, folder] = target.split('/');
      if (top !== 'src') {
        wrong.push(`${file} imports ${target}, outside src/`);
        continue;
      }
      if (folder === from || folder === undefined) continue;
      if (!(BELOW[from] ?? []).includes(folder)) wrong.push(`${file} imports ${target}`);
    }
  }
  assert.equal(wrong, []);
});

imports.run();
