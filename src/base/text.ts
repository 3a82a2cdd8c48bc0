/** Text bounded in bytes, as the schemas bound strings (maxBytes counts UTF-8 bytes). */

/** The bound of a free text member (a receipt's message, a state's progress): text in schemas/common.schema.json. */
export const MESSAGE_MAX_BYTES = 1024;

/** Cut a text to at most `max` bytes of UTF-8 without splitting a character. */
export function clipUtf8(text: string, max = MESSAGE_MAX_BYTES): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= max) return text;
  let end = max;
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}
