/**
 * The fenced code blocks of a markdown file, each with the id its
 * `<!-- readme-test: ID -->` marker gives it (the last non-blank line before
 * the fence), so that a test can say how each block runs (test/readme/).
 * A block without a marker has id undefined: the test fails on it, so the
 * README cannot grow a block that nothing runs.
 */
import { readFileSync } from 'node:fs';

export interface Block {
  /** The file, as given. */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The info string's first word (sh, python, ts, ini), '' for none. */
  lang: string;
  /** The marker's id, undefined when the block has none. */
  id: string | undefined;
  /** The block's text, with a final newline. */
  text: string;
}

const MARKER = /^<!--\s*readme-test:\s*([a-z0-9-]+)\s*-->$/;

export function readmeBlocks(file: string): Block[] {
  const lines = readFileSync(file, 'utf8').split('\n');
  const blocks: Block[] = [];
  for (let at = 0; at < lines.length; at += 1) {
    const open = /^(`{3,}|~{3,})\s*([^\s`]*)/.exec(lines[at] as string);
    if (open === null) continue;
    const fence = open[1] as string;
    let before = at - 1;
    while (before >= 0 && (lines[before] as string).trim() === '') before -= 1;
    const marker = before >= 0 ? MARKER.exec((lines[before] as string).trim()) : null;
    let end = at + 1;
    while (end < lines.length && !(lines[end] as string).startsWith(fence)) end += 1;
    blocks.push({ file, line: at + 1, lang: open[2] as string, id: marker?.[1], text: `${lines.slice(at + 1, end).join('\n')}\n` });
    at = end;
  }
  return blocks;
}

/** The one block of `file` whose marker is `id`; throws when there is none or more than one. */
export function readmeBlock(file: string, id: string): Block {
  const found = readmeBlocks(file).filter((block) => block.id === id);
  if (found.length !== 1) throw new Error(`${file}: ${found.length} blocks marked readme-test: ${id}, want 1`);
  return found[0] as Block;
}
