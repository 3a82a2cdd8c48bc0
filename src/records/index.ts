/**
 * `fsjob/schemas`: the record format on its own (spec/records.md, spec/spec-record.md), for
 * programs that read or write fsjob records without the producer or the
 * consumer: every record type, the JSON Schemas compiled ahead of time, and
 * checks whose problems come back as data (findings), never as exceptions.
 *
 *   const findings = checkRecord('receipt', bytes);       // [] when valid
 *   const inspection = inspectRecord('spec', bytes);      // { ok, value, findings }
 *   const bytes = encodeRecord('cancel', record);         // compact JSON, schema-checked first (VER-4)
 *
 * The schema documents themselves ship beside the code as
 * `fsjob/schemas/<name>.schema.json`.
 */
// Many records are checked here: with ajv's compiled code (src/records/compiled.ts).
import './compiled.ts';
export type * from './generated/types.ts';
export {
  checkRecord,
  encodeRecord,
  inspectRecord,
  isValidRecord,
  maxBytesOf,
  readRecord,
  parseRecordBytes,
  serializeRecord,
  recordNameOf,
  type CheckOptions,
  type Inspection,
  type ParseFailure,
  type ParseFailureCode,
  type ParseResult,
  type ReadRecordOptions,
  type RecordExpectations,
  type RecordName,
} from './codec.ts';
export {
  RECORD_TYPES,
  DOCUMENT_TYPES,
  SCHEMA_BASE,
  isRecordType,
  isDocumentType,
  schemaDocument,
  schemaDocuments,
  schemaErrors,
  schemaFindings,
  validatorFor,
  type CompiledValidator,
  type DocumentType,
  type RecordType,
  type SchemaDocument,
  type SchemaError,
} from './schemas.ts';
export { PROTOCOL_VERSION, RECORD_MAX, REQUEST_MAX } from '../base/constants.ts';
export { FINDING_CODES, hasErrors, isFindingCode, type Finding, type FindingCode, type Severity } from './findings.ts';
// encodeRecord, readRecord and serializeRecord throw it (INVALID_RECORD, TOO_LARGE, ...): a program that uses this entry alone catches it from here.
export { FsjobError, isFsjobError, ERROR_CODES, type FsjobErrorCode, type FsjobErrorFields } from '../base/errors.ts';
