/**
 * The shipped declarations: one .d.ts file per entry point of package.json's
 * exports and one shared file, bundled from tsc's declaration emit.
 *
 * Why: tsc writes a .d.ts per module, ~70 files that public types reach,
 * and the install is counted in disk blocks (test/package/install.test.ts):
 * each file's last partly filled block wasted ~140 KB of the ~380 KB they
 * took. Bundled, the entries are a few re-export lines each and the shared
 * file holds every declaration once, so a class such as FsjobError is one
 * type whichever entry a user imports it from (a copy per entry would make
 * two distinct types).
 *
 * The tool: rollup with rollup-plugin-dts (devDependencies, pinned; ~1 s
 * of a build). It reads tsc's .d.ts files, keeps the TSDoc comments, and
 * puts shared declarations in a chunk the way rollup splits code; rollup
 * needs no C++ toolchain (a prebuilt binary per platform, as esbuild's), and
 * nothing of either ships (rollup-plugin-dts is LGPL-3.0, a build tool
 * here). Considered: @microsoft/api-extractor rolls up one entry at a time
 * (no shared file) and pins its own TypeScript (a second compiler, 6.x,
 * beside the project's 5.9); dts-bundle-generator inlines what each entry
 * needs into that entry (the two-types problem above).
 *
 * The check: the bundle must give each entry the same exported names, each
 * with the same printed type, the same members with their printed types,
 * and the same documentation as tsc's per-module files did (surfacesOf below,
 * with the TypeScript compiler); any difference fails the build, so a
 * bundle that drops, renames or changes an exported type cannot ship.
 */
import { builtinModules } from 'node:module';
import path from 'node:path';
import { rollup, type RollupLog } from 'rollup';
import { dts } from 'rollup-plugin-dts';
import ts from 'typescript';
import { ROOT } from './inputs.mjs';

/** The file of shared declarations, beside the entries (relative to the output directory, without .d.ts). */
export const SHARED_CHUNK = 'src/types';

/**
 * Bundles the declarations of `entries` (name relative to `outDir` without
 * .d.ts, e.g. 'src/index', to the .d.ts file tsc wrote for it, with `.js`
 * import specifiers) into `outDir`: each entry a file of re-exports, every
 * declaration they reach in the one file `shared` (one file rather than a
 * chunk per set of entries: each file's last block is partly empty);
 * returns the files written.
 */
export async function bundleDeclarations(entries: Readonly<Record<string, string>>, outDir: string, shared = SHARED_CHUNK): Promise<string[]> {
  const entryFiles = new Set(Object.values(entries).map((file) => path.resolve(file)));
  const problems: string[] = [];
  const bundle = await rollup({
    input: { ...entries },
    // Node's own modules stay imports, as in tsc's files (@types/node types them).
    external: (id) => id.startsWith('node:') || builtinModules.includes(id),
    treeshake: { moduleSideEffects: 'no-external' },
    plugins: [dts()],
    onLog: (level, log: RollupLog) => {
      // rollup-plugin-dts names the types that entries use but no entry exports (Clock, SafeFsSeam, ...):
      // they were as unnameable before, behind the exports map, so that is no change.
      if (log.plugin === 'dts' && /private shared type exports/.test(log.message)) return;
      // Modules that import each other are no problem for declarations (nothing runs).
      if (log.code === 'CIRCULAR_DEPENDENCY') return;
      if (level === 'warn' || log.code === 'UNRESOLVED_IMPORT') problems.push(`${log.code ?? level}: ${log.message}`);
    },
  });
  try {
    const { output } = await bundle.write({
      dir: outDir,
      format: 'es',
      entryFileNames: '[name].d.ts',
      chunkFileNames: '[name].d.ts',
      // Readable export names in the shared file: a user's editor may show them.
      minifyInternalExports: false,
      manualChunks: (id) => (entryFiles.has(path.resolve(id)) ? undefined : shared),
    });
    if (problems.length > 0) throw new Error(`tools/build/declarations.ts: bundling the declarations:\n${problems.join('\n')}`);
    return output.map((file) => path.join(outDir, file.fileName));
  } finally {
    await bundle.close();
  }
}

/** What an entry exports, name by name: the kind, the printed type, the members and their printed types, the documentation. */
export type Surface = Map<string, Map<string, string>>;

const PRINT = ts.TypeFormatFlags.NoTruncation | ts.TypeFormatFlags.InTypeAlias | ts.TypeFormatFlags.WriteArrayAsGenericType;

const CLOSE: Readonly<Record<string, string>> = { '(': ')', '[': ']', '{': '}', '<': '>' };

/**
 * A printed type with the members of each union and intersection in one
 * order: TypeScript prints them in the order it first met their types
 * ("hold" | "spec" in one program, "spec" | "hold" in another), which
 * depends on the order it read the files, not on the declarations.
 */
export function canonicalType(text: string): string {
  let at = 0;
  // Nested groups and string literals stand as placeholders while their list item is sorted, so only its own top-level | and & split it.
  const held: string[] = [];
  const hold = (part: string): string => `\u0000${held.push(part) - 1}\u0000`;
  const release = (part: string): string => part.replace(/\u0000(\d+)\u0000/g, (_whole, index: string) => release(held[Number(index)] as string));
  // Reads up to `close` (or the end); returns the content with each list item's union and intersection members sorted.
  const group = (close: string | undefined): string => {
    const items: string[] = [];
    let item = '';
    while (at < text.length) {
      const char = text[at] as string;
      at += 1;
      if (char === close && !(char === '>' && item.endsWith('='))) break;
      if (char === '"' || char === "'" || char === '`') {
        let literal = char;
        while (at < text.length && text[at] !== char) literal += text[at] === '\\' ? `${text[at++]}${text[at++] ?? ''}` : text[at++];
        item += hold(`${literal}${text[at++] ?? ''}`);
      } else if (char in CLOSE && !(char === '<' && /\s$/.test(item))) {
        const inner = group(CLOSE[char]);
        // An object type's members in name order: a mapped type (Omit, Pick) lists them in its key union's order.
        item += hold(`${char}${char === '{' ? inner.split(';').map((member) => member.trim()).filter((member) => member !== '').sort().join('; ') : inner}${CLOSE[char]}`);
      } else if (char === ';' || char === ',') {
        items.push(sortMembers(item, release), char);
        item = '';
      } else item += char;
    }
    items.push(sortMembers(item, release));
    return items.join('');
  };
  return release(group(undefined));
}

/**
 * One list item (`a?: X | Y`, `X | Y`, `(x: A) => X | Y`) with its union
 * members, and their intersection members, sorted by what they print as.
 */
function sortMembers(item: string, release: (part: string) => string): string {
  // What comes before the type: a member's name, a function type's parameters, a type predicate's `x is`.
  const arrow = item.indexOf(' => ');
  const head = arrow >= 0 ? item.slice(0, arrow + 4) : (/^(\s*(?:readonly\s+)?(?:[\w$]+|\u0000\d+\u0000)\??:\s)/.exec(item)?.[1] ?? '');
  const predicate = /^((?:asserts\s+)?[\w$]+\s+is\s)/.exec(item.slice(head.length))?.[1] ?? '';
  const label = `${head}${predicate}`;
  const sorted = (parts: string[]): string[] => parts.map((part) => part.trim()).sort((a, b) => (release(a) < release(b) ? -1 : release(a) > release(b) ? 1 : 0));
  return `${label}${sorted(item.slice(label.length).split(' | ').map((member) => sorted(member.split(' & ')).join(' & '))).join(' | ')}`;
}

/** A member's name; a well-known symbol's is named with the id of the symbol (__@asyncIterator@69), which depends on the order of reading. */
function memberName(member: ts.Symbol): string {
  return member.name.replace(/^__@(\w+)@\d+$/, '[Symbol.$1]');
}

/**
 * The exported surface of each file of each of `sets` (entry name to .d.ts
 * file), as a user's TypeScript sees it; one program for all (reading
 * @types/node and the lib once).
 */
export function surfacesOf(...sets: ReadonlyArray<Readonly<Record<string, string>>>): Surface[] {
  const files = sets.flatMap((entries) => Object.values(entries));
  const program = ts.createProgram(files, { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, strict: true, noEmit: true, types: ['node'], typeRoots: [path.join(ROOT, 'node_modules', '@types')] });
  const checker = program.getTypeChecker();
  const print = (type: ts.Type): string => canonicalType(checker.typeToString(type, undefined, PRINT));
  // The members the package declares: not those of the lib's String, Array, ... behind a literal union or an array type.
  const ours = (member: ts.Symbol): boolean => (member.declarations ?? []).some((declaration) => !declaration.getSourceFile().fileName.includes('/node_modules/'));
  const doc = (symbol: ts.Symbol): string => ts.displayPartsToString(symbol.getDocumentationComment(checker));
  const surfaceOf = (entries: Readonly<Record<string, string>>): Surface => {
    const out: Surface = new Map();
    for (const [entry, file] of Object.entries(entries)) {
      const source = program.getSourceFile(file);
      const module = source === undefined ? undefined : checker.getSymbolAtLocation(source);
      if (module === undefined) throw new Error(`tools/build/declarations.ts: ${file} is no module`);
      const names = new Map<string, string>();
      for (const symbol of checker.getExportsOfModule(module)) {
        const target = (symbol.flags & ts.SymbolFlags.Alias) !== 0 ? checker.getAliasedSymbol(symbol) : symbol;
        const lines = [`flags ${target.flags & ~ts.SymbolFlags.Transient}`];
        if ((target.flags & ts.SymbolFlags.Value) !== 0) lines.push(`value: ${print(checker.getTypeOfSymbol(target))}`);
        if ((target.flags & ts.SymbolFlags.Type) !== 0) {
          const declared = checker.getDeclaredTypeOfSymbol(target);
          lines.push(`type: ${print(declared)}`);
          const members = checker.getPropertiesOfType(declared).filter(ours).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
          for (const member of members) lines.push(`  ${memberName(member)}: ${print(checker.getTypeOfSymbol(member))} ${doc(member)}`);
        }
        lines.push(`doc: ${doc(target)}`);
        names.set(symbol.name, lines.join('\n'));
      }
      out.set(entry, names);
    }
    return out;
  };
  return sets.map(surfaceOf);
}

/** The differences between two surfaces, one per entry and name; empty when they agree. */
export function surfaceChanges(before: Surface, after: Surface): string[] {
  const changes: string[] = [];
  for (const entry of new Set([...before.keys(), ...after.keys()])) {
    const was = before.get(entry) ?? new Map<string, string>();
    const now = after.get(entry) ?? new Map<string, string>();
    for (const name of new Set([...was.keys(), ...now.keys()])) {
      const a = was.get(name);
      const b = now.get(name);
      if (a === b) continue;
      if (b === undefined) changes.push(`${entry}: ${name} is gone`);
      else if (a === undefined) changes.push(`${entry}: ${name} is new`);
      else changes.push(`${entry}: ${name} changed:\n--- before\n${a}\n--- after\n${b}`);
    }
  }
  return changes;
}
