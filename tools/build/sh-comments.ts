/**
 * The shell scripts the built code carries (spawner.sh, guardian.sh: written
 * into their modules by build.ts) without their comment lines and blank
 * lines. The comments say why each step is there, for the reader of the
 * source; in dist/ they were most of the scripts' 26 KB, paid by every
 * install (test/package/install.test.ts holds it under 3 MB) and by every
 * spawner's and guardian's environment (the script travels in it).
 *
 * Only whole lines go: blank, or `#` first, where the shell reads a new
 * command (not inside a quoted string, which may be code for a later `eval`,
 * nor in a here-document's body, which is data; the first line's `#!`
 * stays). bash's own parse of both texts must print the same (`declare -f`
 * of the script as a function body: comments and blank lines are not part
 * of it), or the build fails: a script whose quoting this scanner misread
 * is never shipped changed (where bash is missing, the scripts ship whole).
 */
import { spawnSync } from 'node:child_process';

export function withoutCommentLines(script: string): string {
  const kept: string[] = [];
  let quote: "'" | '"' | "$'" | null = null;
  let heredoc: { word: string; tabs: boolean } | null = null;
  script.split('\n').forEach((line, index) => {
    if (heredoc !== null) {
      kept.push(line);
      if ((heredoc.tabs ? line.replace(/^\t+/, '') : line) === heredoc.word) heredoc = null;
      return;
    }
    if (quote === null && index > 0 && /^\s*(#.*)?$/.test(line)) return;
    kept.push(line);
    for (let i = 0; i < line.length; i++) {
      const c = line[i];
      if (quote === "'") {
        if (c === "'") quote = null;
      } else if (quote === '"' || quote === "$'") {
        if (c === '\\') i++;
        else if (c === (quote === '"' ? '"' : "'")) quote = null;
      } else if (c === '\\') i++;
      else if (c === "'") quote = "'";
      else if (c === '"') quote = '"';
      else if (c === '$' && line[i + 1] === "'") {
        quote = "$'";
        i++;
      } else if (c === '#' && (i === 0 || /\s/.test(line[i - 1] as string))) break; // a comment to the end of the line
      else if (c === '<' && line[i + 1] === '<' && line[i + 2] !== '<') {
        const start = /^<<(-?)\s*(['"]?)([A-Za-z_][A-Za-z0-9_]*)\2/.exec(line.slice(i));
        if (start !== null) heredoc = { word: start[3] as string, tabs: start[1] === '-' };
      }
    }
  });
  if (quote !== null || heredoc !== null) throw new Error(`tools/build/sh-comments.ts: the script ends inside a ${quote !== null ? 'quoted string' : 'here-document'}`);
  return kept.join('\n');
}

/** bash's parse of `script` as a function body (null where bash is not installed). */
function bashParse(script: string): string | null {
  const run = spawnSync('bash', ['--norc', '-c', 'eval "fsjob_f() {\n$S\n}" && declare -f fsjob_f'], { env: { S: script, PATH: process.env['PATH'] ?? '/usr/bin:/bin' }, encoding: 'utf8' });
  if (run.error !== undefined) return null;
  if (run.status !== 0) throw new Error(`tools/build/sh-comments.ts: bash cannot parse the script: ${run.stderr}`);
  return run.stdout;
}

/** The script without its comment lines, checked by bash's parse to mean what the source means. */
export function shippedScript(name: string, script: string): string {
  const shipped = withoutCommentLines(script);
  const [before, after] = [bashParse(script), bashParse(shipped)];
  // No bash to check with: the script ships whole (a few KB more), never unchecked.
  if (before === null) return script;
  if (before !== after) throw new Error(`tools/build/sh-comments.ts: ${name} without its comment lines parses differently; ship it whole or fix the scanner`);
  return shipped;
}
