/**
 * yargs lays help out in columns with cliui and string-width, whose loading
 * (Unicode tables, a grapheme segmenter) costs a start more than the rest of
 * yargs. Only a start that shows help needs them.
 *
 * From the sources yargs loads them itself and this does nothing. The
 * command's bundle (tools/build/cli-bundle.ts) hands yargs lazy stand-ins
 * instead and replaces this module with one that loads the real modules:
 * main.ts calls it when argv asks for help, before yargs renders any.
 */
export async function preloadHelpLayout(): Promise<void> {}
