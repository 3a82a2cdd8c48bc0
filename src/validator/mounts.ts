/**
 * Which mount a directory is on (LAYOUT-3). Equal device numbers are not
 * enough: rename(2) fails with EXDEV across two mounts of one filesystem too
 * (a bind mount over tmp/), so the validator also compares mounts, read from
 * /proc/self/mountinfo (Linux; elsewhere only devices are compared).
 */
import { readFileSync, realpathSync } from 'node:fs';

interface Mount {
  id: string;
  point: string;
}

/** mountinfo escapes space, tab, newline and backslash as \ooo. */
function unescape(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}

function readMounts(): Mount[] | undefined {
  try {
    return readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => {
        const fields = line.split(' ');
        return { id: fields[0] ?? '', point: unescape(fields[4] ?? '') };
      });
  } catch {
    return undefined;
  }
}

/** The mount holding `dir`: the longest mount point above it, the last one mounted when several share it. */
function mountOf(dir: string, mounts: readonly Mount[]): string | undefined {
  let best: Mount | undefined;
  for (const mount of mounts) {
    const above = mount.point === '/' || dir === mount.point || dir.startsWith(`${mount.point}/`);
    if (above && (best === undefined || mount.point.length >= best.point.length)) best = mount;
  }
  return best?.id;
}

/** Whether `a` and `b` are directories of different mounts; undefined when that cannot be told here. */
export function onDifferentMounts(a: string, b: string): boolean | undefined {
  const mounts = readMounts();
  if (mounts === undefined) return undefined;
  try {
    const ma = mountOf(realpathSync(a), mounts);
    const mb = mountOf(realpathSync(b), mounts);
    return ma === undefined || mb === undefined ? undefined : ma !== mb;
  } catch {
    return undefined;
  }
}
