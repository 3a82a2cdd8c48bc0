/**
 * The finding registry against the queue audit: every code the validator can
 * emit is a registry code, and each one is produced by at least one test of
 * test/validator/queue-*.test.ts that builds the hazard on a real queue.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { FINDING_CODES, isFindingCode } from '../../src/records/findings.ts';

const SRC = new URL('../../src/validator/', import.meta.url);
const TESTS = new URL('./', import.meta.url);
/** What src/core held before the layout of issue 15: the record layer and everything below it. */
const CORE = ['../../src/base/', '../../src/fs/', '../../src/records/', '../../src/records/generated/', '../../src/model/', '../../tools/gen/'].map((dir) => new URL(dir, import.meta.url));

function sources(dir: URL, keep: (name: string) => boolean): string {
  return readdirSync(dir)
    .filter(keep)
    .map((name) => readFileSync(new URL(name, dir), 'utf8'))
    .join('\n');
}

/** Quoted upper-case words that are registry codes. */
function codesIn(text: string): Set<string> {
  return new Set([...text.matchAll(/'([A-Z][A-Z0-9_]+)'/g)].map((match) => match[1] ?? '').filter((word) => isFindingCode(word)));
}

const registry = suite('finding codes of the queue audit');

registry('every code the validator emits is in the registry and is exercised by a validate-queue test', () => {
  const emitted = codesIn(sources(SRC, (name) => name.endsWith('.ts')));
  const tested = codesIn(sources(TESTS, (name) => /^queue-.*\.test\.ts$/.test(name)));
  assert.ok(emitted.size >= 50, `found ${emitted.size} codes in src/validator`);
  const untested = [...emitted].filter((code) => !tested.has(code));
  assert.equal(untested, [], 'codes without a test');
});

registry('every registry code is emitted somewhere: by the queue audit or by the record layer', () => {
  const everywhere = codesIn(sources(SRC, (name) => name.endsWith('.ts')) + CORE.map((dir) => sources(dir, (name) => name.endsWith('.ts') && name !== 'findings.ts')).join('\n'));
  const unused = Object.keys(FINDING_CODES).filter((code) => !everywhere.has(code));
  assert.equal(unused, []);
});

registry.run();
