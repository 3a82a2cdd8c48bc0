/**
 * Importing this module makes every schema check use ajv's code compiled
 * ahead of time (src/records/generated/validators.js, 715 KB) instead of
 * reading the schema documents (src/records/interpret.ts): same verdicts,
 * about five times less CPU per record, a dozen milliseconds more to load;
 * and records are parsed by fast-json.ts (codec.ts useParser).
 *
 * Imported by what checks many records (the validator, the consumer, the
 * `fsjob/schemas` and root entries) and never by the producer, so that an
 * enqueue, and an app that bundles `fsjob/producer`, does not carry it.
 */
import { validators } from './generated/validators.js';
import { useCompiledValidators } from './schemas.ts';
import { useParser } from './codec.ts';
import { nativeParseRecordBytes } from './fast-json.ts';

useCompiledValidators(validators);
// Records are parsed the fast way too (codec.ts useParser): the road of native calls that suits a
// consumer's spec per job; the validator's bulk reads name their own (fast-record.ts, entries.ts).
useParser(nativeParseRecordBytes);
