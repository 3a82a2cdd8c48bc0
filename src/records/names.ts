/**
 * Which record a file name holds (LAYOUT-5, LAYOUT-8, LAYOUT-9), and what its
 * name says about its content (REC-7): the job directory names the job, the
 * `<g>` of `claim.<g>.json` names the generation, and so on. Names are
 * matched against their patterns before anything is read from them (SEC-7).
 */
import type { RecordType } from './schemas.ts';

import { GEN_MAX } from '../base/constants.ts';
export const JOB_ID_PATTERN = /^[0-9]{19}-[0-9a-f]{16}$/;
export const WORKER_ID_PATTERN = /^[0-9a-f]{16}$/;
export const KEY_HASH_PATTERN = /^[0-9a-f]{64}$/;
/** The suffix of a gated job's directory name in jobs/ (GATE-1, LAYOUT-4). */
export const GATED_SUFFIX = '.gated';

/** The job id of a directory name in jobs/: `<id>` (open) or `<id>.gated` (GATE-1); undefined for any other name. */
export function jobIdOfDirName(name: string): string | undefined {
  const id = name.endsWith(GATED_SUFFIX) ? name.slice(0, -GATED_SUFFIX.length) : name;
  return JOB_ID_PATTERN.test(id) ? id : undefined;
}

const GEN_TEXT = /^[1-9][0-9]{0,4}$/;
const HOLD_NUMBER_TEXT = /^[1-9][0-9]{0,15}$/;
const GEN_RECORD = /^(claim|exec|state|end)\.([^.]+)\.json$/;

/** What the name a record is stored under says its members must be (REC-3, REC-7). */
export interface RecordExpectations {
  /** Name of the job directory: job_id (id in spec.json) must equal it. */
  expectedJobId?: string | undefined;
  /** `<g>` of a generation record's name: gen must equal it. */
  expectedGen?: number | undefined;
  /** cancel-force.json holds force true, cancel.json force false. */
  expectedForce?: boolean | undefined;
  /** dedupe/ or lanes/: the hold's kind. */
  expectedKind?: 'dedupe' | 'lane' | undefined;
  /** `<h>` of a hold's directory: the SHA-256 of its key. */
  expectedKeyHash?: string | undefined;
  /** `<w>` of workers/<w>.json: the worker id. */
  expectedWorkerId?: string | undefined;
}

/** What a file name says about the record it holds (LAYOUT-5): its type and what REC-7 fixes. */
export interface RecordName {
  type: RecordType;
  expectations: RecordExpectations;
}

/** A claim generation written as LAYOUT-5 says (1 to GEN_MAX, no leading zeros), or undefined. */
export function parseGeneration(text: string): number | undefined {
  if (!GEN_TEXT.test(text)) return undefined;
  const gen = Number(text);
  return gen <= GEN_MAX ? gen : undefined;
}

/** A hold number as LAYOUT-8 says (1 to 2^53-1, no leading zeros), or undefined. */
export function parseHoldNumber(text: string): number | undefined {
  if (!HOLD_NUMBER_TEXT.test(text)) return undefined;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : undefined;
}

/**
 * The record type of a path, from its last components, or undefined when the
 * name is not a record name. Job records take the job id from their directory
 * when it is a valid job id; a record outside a job directory gets no job id
 * expectation.
 */
export function recordNameOf(path: string): RecordName | undefined {
  const parts = path.split('/').filter((part) => part !== '' && part !== '.');
  const base = parts.at(-1);
  const parent = parts.at(-2);
  const grandparent = parts.at(-3);
  if (base === undefined) return undefined;
  const jobId = parent === undefined ? undefined : jobIdOfDirName(parent);
  const job = (type: RecordType, more: RecordExpectations = {}): RecordName => ({
    type,
    expectations: { ...(jobId === undefined ? {} : { expectedJobId: jobId }), ...more },
  });

  if (base === 'fsjob.json') return { type: 'queue', expectations: {} };
  if (base === 'pause.json') return { type: 'pause', expectations: {} };
  if (base === 'spec.json') return job('spec');
  if (base === 'receipt.json') return job('receipt');
  if (base === 'cancel.json') return job('cancel', { expectedForce: false });
  if (base === 'cancel-force.json') return job('cancel', { expectedForce: true });
  if (base === 'release.json') return job('release');
  const generation = GEN_RECORD.exec(base);
  if (generation !== null) {
    const gen = parseGeneration(generation[2] ?? '');
    if (gen === undefined) return undefined;
    return job(generation[1] as RecordType, { expectedGen: gen });
  }
  if (parent === 'workers' && base.endsWith('.json')) {
    const workerId = base.slice(0, -'.json'.length);
    return WORKER_ID_PATTERN.test(workerId) ? { type: 'worker', expectations: { expectedWorkerId: workerId } } : undefined;
  }
  if ((grandparent === 'dedupe' || grandparent === 'lanes') && parent !== undefined && base.endsWith('.json')) {
    if (!KEY_HASH_PATTERN.test(parent) || parseHoldNumber(base.slice(0, -'.json'.length)) === undefined) return undefined;
    return {
      type: 'hold',
      expectations: { expectedKind: grandparent === 'dedupe' ? 'dedupe' : 'lane', expectedKeyHash: parent },
    };
  }
  return undefined;
}
