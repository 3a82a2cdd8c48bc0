/**
 * The audit's fast accept of a record (REC-4) that passes every step with
 * nothing to say, for audits that read 100,000s of them: compact form
 * (src/records/fast-json.ts), a version this reader reads with no note
 * (VER-1), the type its name says (REC-3), the schema (REC-5, the compiled
 * validators), and the members its name fixes in a job directory (REC-7:
 * the job id, the generation, force). It answers the value, or undefined for anything else,
 * and then inspectRecord (src/records/codec.ts) gives the verdict and says
 * what is wrong: this function never rejects, so it can find nothing less.
 *
 * test/validator/fast-record.test.ts holds it to inspectRecord's verdict over
 * damaged records of every type.
 */
import { PROTOCOL_MAJOR, PROTOCOL_MINOR, RECORD_MAX } from '../base/constants.ts';
import type { JsonObject } from '../records/json.ts';
import type { RecordExpectations } from '../records/names.ts';
import { schemaErrors, type RecordType } from '../records/schemas.ts';
import { compactRecordValue } from '../records/fast-json.ts';

/** Versions read without a finding: this major, minors up to the reader's (a newer minor gets RECORD_NEWER_MINOR). */
const QUIET_VERSIONS: ReadonlySet<unknown> = new Set(Array.from({ length: PROTOCOL_MINOR + 1 }, (_, minor) => `${PROTOCOL_MAJOR}.${minor}`));

/** The member that names the job in a record stored in a job directory. */
const JOB_ID_MEMBER: Partial<Record<RecordType, string>> = { spec: 'id', claim: 'job_id', exec: 'job_id', state: 'job_id', end: 'job_id', cancel: 'job_id', receipt: 'job_id', release: 'job_id' };

/**
 * The record in `bytes` when it is of `type`, valid, and stored under a name
 * whose expectations it meets, with no finding at all; else undefined.
 * Expectations other than a job id, a generation and force take the full
 * road (undefined).
 */
export function acceptRecord(type: RecordType, bytes: Uint8Array, expect: RecordExpectations): JsonObject | undefined {
  if (bytes.length > RECORD_MAX) return undefined;
  if (expect.expectedKind !== undefined || expect.expectedWorkerId !== undefined || expect.expectedKeyHash !== undefined) return undefined;
  const value = compactRecordValue(bytes);
  if (value === undefined || !QUIET_VERSIONS.has(value['fsjob']) || value['type'] !== type) return undefined;
  if (schemaErrors(type, value).length > 0) return undefined;
  if (expect.expectedJobId !== undefined) {
    const member = JOB_ID_MEMBER[type];
    if (member !== undefined && value[member] !== expect.expectedJobId) return undefined;
  }
  if (expect.expectedGen !== undefined && value['gen'] !== expect.expectedGen) return undefined;
  if (expect.expectedForce !== undefined && value['force'] !== expect.expectedForce) return undefined;
  return value;
}
