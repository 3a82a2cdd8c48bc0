/**
 * The numbers table of spec/README.md is every constant of the protocol and
 * its tools, and the reference uses the same numbers under the same names
 * (src/base/constants.ts): a row the code does not know, or a value that
 * drifted from it, fails here by name.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import * as constants from '../../src/base/constants.ts';
import { readSpec } from '../support/spec-clauses.ts';

const section = readSpec('README.md').split(/^## Numbers$/m)[1]?.split(/^## /m)[0] ?? '';
/** name -> the integers of its value cell (LEASE_MIN, LEASE_MAX share a row). */
const rows = new Map<string, number>();
for (const match of section.matchAll(/^\| ([A-Z_, ]+) \| ([^|]+) \|/gm)) {
  const names = (match[1] ?? '').split(', ');
  if (!/^[0-9]/.test(match[2] ?? '')) continue; // RENEW_INTERVAL: lease / 3, a rule (renewInterval), not a number
  const values = [...(match[2] ?? '').matchAll(/(?<![\w^])([0-9]+)(?= (?:ms|bytes)\b|$| \()/g)].map((value) => Number(value[1]));
  names.forEach((name, index) => {
    if (values[index] !== undefined) rows.set(name, values[index]);
  });
}

const numbers = suite('the numbers table of spec/README.md');

numbers('lists every constant, CONSUME_RETRY_WAIT (MANIFEST-4) included', () => {
  assert.ok(rows.size >= 25, [...rows.keys()].join(' '));
  assert.is(rows.get('CONSUME_RETRY_WAIT'), 60000);
  assert.ok(section.includes('| RENEW_INTERVAL | lease / 3 |'));
});

numbers('every number is the one the reference uses under the same name', () => {
  const table = constants as unknown as Record<string, unknown>;
  for (const [name, value] of rows) assert.is(table[name], value, name);
});

numbers.run();
