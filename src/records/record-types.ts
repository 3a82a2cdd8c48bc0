/**
 * The names of the record types (REC-3) and of what a record check takes,
 * with nothing else: `fsjob validate --type` lists them in its help, which
 * loads no schema (src/cli/commands/validate.ts); schemas.ts re-exports them.
 */
/** Record types of REC-3, in the order of spec/records.md. */
export const RECORD_TYPES = ['queue', 'spec', 'claim', 'exec', 'state', 'end', 'cancel', 'receipt', 'worker', 'hold', 'pause', 'release'] as const;
/** A record type of REC-3: the `type` member of every record. */
export type RecordType = (typeof RECORD_TYPES)[number];
/** What checkRecord can check: a record type, or the request form (spec/spec-record.md). */
export type DocumentType = RecordType | 'request';
/** Every type `checkRecord` can check: the record types of REC-3, then `request`. */
export const DOCUMENT_TYPES: readonly DocumentType[] = [...RECORD_TYPES, 'request'];

/** True when `value` is a record type of REC-3. */
export function isRecordType(value: string): value is RecordType {
  return (RECORD_TYPES as readonly string[]).includes(value);
}

/** True when `value` names a type `checkRecord` can check. */
export function isDocumentType(value: string): value is DocumentType {
  return (DOCUMENT_TYPES as readonly string[]).includes(value);
}
