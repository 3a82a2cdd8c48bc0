#!/bin/sh
# tools/vectors.sh - run conformance/vectors/*.json against fsjob-sh's record
# and request readers. A development aid, not part of the implementation:
# node only expands the vector files into one file per case (their JSON is
# pretty-printed); every verdict comes from `fsjob-sh _check-record` or
# `fsjob-sh _check-request`. Prints the cases whose verdict differs.
LC_ALL=C
export LC_ALL
HERE=$(cd -P -- "$(dirname -- "$0")/.." && pwd -P) || exit 1
ROOT=$(cd -P -- "$HERE/../../.." && pwd -P) || exit 1
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fsjob-sh-vectors.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
node - "$ROOT/conformance/vectors" "$WORK" <<'JS' || exit 1
const fs = require("fs"), path = require("path");
const [dir, out] = process.argv.slice(2);
const lines = [];
let n = 0;
for (const f of fs.readdirSync(dir).filter((f) => f.endsWith(".json")).sort()) {
  const v = JSON.parse(fs.readFileSync(path.join(dir, f)));
  for (const t of v.tests) {
    n++;
    const bytes = t.raw !== undefined ? Buffer.from(t.raw, "utf8")
      : t.raw_base64 !== undefined ? Buffer.from(t.raw_base64, "base64")
      : Buffer.from(JSON.stringify(t.data) + "\n", "utf8");
    const name = t.file_name || (v.record_type + ".json");
    const p = path.join(out, String(n), name);
    fs.mkdirSync(path.dirname(p), { recursive: true, mode: 0o700 });
    fs.writeFileSync(p, bytes, { mode: 0o600 });
    lines.push([v.record_type, p, t.file_name || "", t.valid ? "valid" : "invalid", f + ": " + t.description].join("\x01"));
  }
}
fs.writeFileSync(path.join(out, "cases.tsv"), lines.join("\n") + "\n");
JS
pass=0 fail=0
SEP=$(printf "\001")
while IFS=$SEP read -r type file name want desc; do
  if [ "$type" = request ]; then
    got=$("$HERE/fsjob-sh" _check-request "$file" 2>/dev/null)
  else
    got=$("$HERE/fsjob-sh" _check-record "$type" "$file" "$name" 2>/dev/null)
  fi
  case $got in valid) verdict=valid ;; *) verdict=invalid ;; esac
  if [ "$verdict" = "$want" ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    printf 'MISMATCH want %s: %s\n    got: %s\n' "$want" "$desc" "$got"
  fi
done < "$WORK/cases.tsv"
printf '%d cases passed, %d differ\n' "$pass" "$fail"
[ "$fail" = 0 ]
