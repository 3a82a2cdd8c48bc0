/** Small pieces of the report's Markdown tables, shared by report.ts, targets.ts and sections.ts. */
import { med, type Outcome } from './harness.ts';

export const byId = (outcomes: readonly Outcome[], id: string): Outcome | undefined => outcomes.find((o) => o.system.id === id);

/** A table's head and alignment lines: the first `left` columns (and those in `alsoLeft`) left-aligned, the others right-aligned. */
export function tableHead(head: readonly string[], left = 1, alsoLeft: readonly number[] = []): string[] {
  return [`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i < left || alsoLeft.includes(i) ? ' --- ' : ' ---: ')).join('|')}|`];
}

export function metric(o: Outcome | undefined, name: string, fmt: (v: number | undefined) => string): string {
  return fmt(med(o, name));
}

/** Why an outcome has no figures (skipped, failed), or undefined when it has. */
export function status(o: Outcome): string | undefined {
  if (o.skipped !== undefined) return `skipped: ${o.skipped}`;
  if (o.error !== undefined && o.samples.length === 0) return `failed: ${o.error}`;
  return undefined;
}

export const fixed = (digits: number, unit = '') => (v: number | undefined) => (v === undefined || !Number.isFinite(v) ? 'n/a' : `${v.toFixed(digits)}${unit}`);
