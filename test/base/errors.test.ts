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

errors('several jobs and a job status: job_ids and job_status in its JSON, copied from the fields given', () => {
  const ids = ['a', 'b'];
  const error = new FsjobError('TIMEOUT', 'timed out', { jobId: 'a', jobIds: ids, jobStatus: 'held' });
  ids.push('c');
  assert.equal(error.jobIds, ['a', 'b']);
  assert.equal(error.toJSON(), { code: 'TIMEOUT', message: 'timed out', job_id: 'a', job_ids: ['a', 'b'], job_status: 'held' });
});

errors.run();
