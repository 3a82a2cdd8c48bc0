/**
 * commandName (src/cli/command-name.ts) finds the command where yargs does:
 * each command line here is also parsed by yargs' parser with main.ts's
 * top-level options (its booleans), and its first positional before "--" is
 * the command; an option's value is never taken for it.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Parser as parse } from 'yargs/helpers';
import { commandName } from '../../src/cli/command-name.ts';

const name = suite('commandName: the command a command line names');

const LINES: [string[], string | undefined][] = [
  [['enqueue', '--queue', 'q', '--', 'true'], 'enqueue'],
  [['--queue', 'q', 'enqueue', '--', 'true'], 'enqueue'],
  [['--queue=q', 'enqueue', '--', 'true'], 'enqueue'],
  [['-q', 'q', 'enqueue', '--', 'true'], 'enqueue'],
  [['-q=q', 'enqueue', 'true'], 'enqueue'],
  [['-vq', 'q', 'enqueue', '--', 'true'], 'enqueue'],
  [['--verbose', 'enqueue', '--', 'true'], 'enqueue'],
  [['-v', 'enqueue'], 'enqueue'],
  [['--verbose', 'true', 'enqueue'], 'enqueue'],
  [['--quiet', '--queue', 'q', 'enqueue', '--', 'true'], 'enqueue'],
  [['--no-json', '--queue', 'q', 'enqueue'], 'enqueue'],
  [['--hold', '--queue', 'q', 'enqueue'], 'enqueue'],
  [['--priority', '-5', 'enqueue'], 'enqueue'],
  [['--stdin', '-', 'enqueue', '--', 'cat'], 'enqueue'],
  // An option's value that reads as a command is the value.
  [['--lane', 'enqueue', 'status'], 'status'],
  [['--lane', 'enqueue', '--queue', 'q', 'enqueue', '--', 'true'], 'enqueue'],
  [['--json', 'enqueue', 'status'], 'status'],
  [['-q', 'enqueue', 'wait', '-'], 'wait'],
  [['--queue', 'q', '--', 'enqueue', 'true'], undefined],
  [['--queue', 'q'], undefined],
  [[], undefined],
];

name('each line gives the command yargs-parser finds with main.ts\'s top-level booleans', () => {
  for (const [argv, expected] of LINES) {
    assert.is(commandName(argv), expected, argv.join(' '));
    const parsed = parse(argv.map((arg, i) => (arg === '-' && argv[i - 1] === '--stdin' ? '' : arg)), {
      boolean: ['verbose', 'quiet', 'help', 'version'],
      alias: { verbose: ['v'], help: ['h'] },
      configuration: { 'populate--': true },
    });
    // "--stdin -": main.ts joins it to "--stdin=-" before yargs parses (a lone "-" is otherwise a positional).
    assert.is(parsed._.length === 0 ? undefined : String(parsed._[0]), expected, `yargs-parser on ${argv.join(' ')}`);
  }
});

name.run();
