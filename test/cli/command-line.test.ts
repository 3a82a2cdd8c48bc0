import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { randomBytes } from 'node:crypto';
import { decodeEscaped, encodeEscaped, requireText, textOf } from '../../src/cli/command-line.ts';
import { bytesOfText } from '../../src/records/bytes.ts';
import { isFsjobError } from '../../src/base/errors.ts';

const escapes = suite('the command line as bytes (SPEC-3)');

escapes('every byte string survives decodeEscaped and encodeEscaped, and textOf gives a record form of exactly those bytes', () => {
  const samples = [Buffer.from('plain'), Buffer.from('caf\u00e9 \u{1f600}'), Buffer.from([0xff]), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0xc0, 0x80]), Buffer.from([0xf4, 0x90, 0x80, 0x80]), Buffer.from([0xe2, 0x82])];
  for (let i = 0; i < 300; i++) samples.push(Buffer.from(randomBytes(i % 40).map((b) => (b === 0 ? 1 : b))));
  for (const bytes of samples) {
    const text = decodeEscaped(bytes);
    assert.equal(encodeEscaped(text), bytes, `round trip of ${bytes.toString('hex')}`);
    assert.equal(bytesOfText(textOf(text, 'x')), bytes, `record form of ${bytes.toString('hex')}`);
  }
});

escapes('valid UTF-8 stays a string; a surrogate, an overlong form and a truncated sequence become the byte form', () => {
  assert.is(textOf(decodeEscaped(Buffer.from('caf\u00e9')), 'x'), 'caf\u00e9');
  for (const bytes of [[0xed, 0xa0, 0x80], [0xc0, 0x80], [0xe2, 0x82]]) assert.equal(textOf(decodeEscaped(Buffer.from(bytes)), 'x'), { base64: Buffer.from(bytes).toString('base64') });
});

escapes('a value that must be text is refused naming it, the byte shown as \\xff', () => {
  try {
    requireText(decodeEscaped(Buffer.from('/tmp/\xff', 'latin1')), '--cwd');
    assert.unreachable('refused');
  } catch (error) {
    assert.ok(isFsjobError(error, 'USAGE'));
    assert.match((error as Error).message, /^--cwd is not valid UTF-8 \("\/tmp\/\\xff"\)/);
  }
});

escapes.run();
