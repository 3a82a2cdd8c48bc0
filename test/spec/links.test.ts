/**
 * The spec is many files that cite each other (issue 25): every relative
 * link in spec/ must reach a file that exists and, with a `#fragment`, a
 * heading of that file (GitHub's slug: lower case, punctuation dropped,
 * spaces as hyphens), so that a role page's step leads to its rule: a
 * checklist step that opens with its clauses (`- [ ] **ENQ-3**: ...`) links
 * to a section that defines each of them.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SPEC = join(ROOT, 'spec');

function markdown(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? markdown(join(dir, entry.name)) : entry.name.endsWith('.md') ? [join(dir, entry.name)] : [],
  );
}

/** GitHub's anchor of a heading. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchors(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/^```[\s\S]*?^```/gm, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((match) => slug(match[1] ?? '')));
}

const links = suite('links between the spec files');

links('every relative link of spec/ reaches a file, and a heading when it names one', () => {
  const broken: string[] = [];
  for (const file of markdown(SPEC)) {
    const text = readFileSync(file, 'utf8').replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
    for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = match[1] ?? '';
      if (/^[a-z]+:/.test(target)) continue;
      const [path = '', fragment] = target.split('#');
      const to = path === '' ? file : join(dirname(file), path);
      const where = `${relative(ROOT, file)}: ${target}`;
      if (!existsSync(to)) broken.push(`${where} (no such file)`);
      else if (fragment !== undefined && (statSync(to).isDirectory() || !anchors(to).has(fragment))) broken.push(`${where} (no such heading)`);
    }
  }
  assert.equal(broken, []);
});

/** The text of a file from a heading (by slug) to the next heading of its level or above; the whole file without one. */
function section(file: string, fragment: string | undefined): string {
  if (!existsSync(file)) return ''; // the link test above names it
  const text = readFileSync(file, 'utf8');
  if (fragment === undefined) return text;
  const lines = text.split('\n');
  const start = lines.findIndex((line) => /^#{1,6} /.test(line) && slug(line.replace(/^#+ /, '')) === fragment);
  if (start < 0) return '';
  const level = /^#+/.exec(lines[start] ?? '')?.[0].length ?? 1;
  const end = lines.findIndex((line, index) => index > start && new RegExp(`^#{1,${level}} `).test(line));
  return lines.slice(start, end < 0 ? undefined : end).join('\n');
}

links('every checklist step of spec/roles/ that opens with clause ids links to a section defining each', () => {
  const roles = markdown(join(SPEC, 'roles'));
  assert.ok(roles.length >= 1);
  const missing: string[] = [];
  let steps = 0;
  for (const file of roles) {
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      const lead = /^\s*(?:- |[0-9]+\. )\[ \] (?:\*[a-z]+\* )?((?:\*\*[A-Z]+-[0-9]+\*\*(?:,| to| and)? ?)+):/.exec(line);
      if (lead === null) continue;
      steps += 1;
      const ids = [...(lead[1] ?? '').matchAll(/\*\*([A-Z]+-[0-9]+)\*\*/g)].map((match) => match[1] ?? '');
      const targets = [...line.matchAll(/\]\(([^)\s]+\.md)(?:#([^)\s]+))?\)/g)].map((match) => section(join(dirname(file), match[1] ?? ''), match[2]));
      for (const id of ids) if (!targets.some((text) => text.includes(`**[${id}]**`))) missing.push(`${relative(ROOT, file)}: ${id} (${line.slice(0, 60)}...)`);
    }
  }
  assert.ok(steps > 10, `${steps} steps`);
  assert.equal(missing, []);
});

links.run();
