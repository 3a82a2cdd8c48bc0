import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { FsjobError, isFsjobError } from '../../src/base/errors.ts';

const errors = suite('FsjobError');

errors('carries a closed code and structured fields', () => {
  const error = new FsjobError('SYMLINK_REFUSED', 'refused', { path: '/q/jobs/x', clause: 'SEC-2' });
  assert.is(error.code, 'SYMLINK_REFUSED');
  assert.is(error.path, '/q/jobs/x');
  assert.ok(isFsjobError(error, 'SYMLINK_REFUSED'));
  assert.not.ok(isFsjobError(error, 'IO'));
  assert.equal(error.toJSON(), { code: 'SYMLINK_REFUSED', message: 'refused', path: '/q/jobs/x', clause: 'SEC-2' });
});

errors.run();
