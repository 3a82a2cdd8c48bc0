/**
 * The shell scripts dist/ carries without their comment lines
 * (tools/build/sh-comments.ts): what goes, what stays (a quoted string that
 * is code for a later eval, a here-document's body), and the check by bash's
 * parse that refuses a text the scanner misread.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { shippedScript, withoutCommentLines } from '../../tools/build/sh-comments.ts';

const strip = suite('shell scripts without comment lines');

strip('comment and blank lines go where the shell reads a command; the shebang, quoted strings and here-documents stay', () => {
  const script = [
    '#!/bin/sh',
    '# why',
    '',
    'a=1 # trailing comments stay',
    "eval '",
    '# code for eval keeps its lines',
    '',
    "'",
    'cat <<EOF',
    '# data',
    '',
    'EOF',
    '  # indented',
    'b="x',
    '# inside double quotes',
    '"',
  ].join('\n');
  assert.is(
    withoutCommentLines(script),
    ['#!/bin/sh', 'a=1 # trailing comments stay', "eval '", '# code for eval keeps its lines', '', "'", 'cat <<EOF', '# data', '', 'EOF', 'b="x', '# inside double quotes', '"'].join('\n'),
  );
});

strip('the scripts dist/ carries parse as their sources do, and lose most of their bytes', () => {
  for (const name of ['spawner.sh', 'guardian.sh']) {
    const source = readFileSync(new URL(`../../src/consumer/${name}`, import.meta.url), 'utf8');
    const shipped = shippedScript(name, source);
    assert.ok(shipped.length < source.length * 0.8, `${name}: ${shipped.length} of ${source.length} bytes`);
    const check = spawnSync('sh', ['-n'], { input: shipped, encoding: 'utf8' });
    assert.is(check.status, 0, `${name}: ${check.stderr}`);
  }
});

strip('a text the scanner misreads is refused, not shipped changed', () => {
  // A double-quoted string inside $( ) inside double quotes: the scanner
  // takes the inner quote for the end of the outer string, so it would drop
  // a line that is part of the string.
  const script = ['x="$(printf \'%s\' "', '# part of the string', '")"'].join('\n');
  const check = spawnSync('bash', ['--version'], { encoding: 'utf8' });
  if (check.error !== undefined) {
    console.log('package/sh-comments: skipped the misread case: bash is not installed');
    return;
  }
  assert.throws(() => shippedScript('misread.sh', script), /parses differently/);
});

strip.run();
