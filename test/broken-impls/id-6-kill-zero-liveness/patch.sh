# BROKEN (ID-6, I5): a same-host owner is judged alive when kill -0 answers,
# without comparing its start time. A pid reused by another process answers,
# so the dead owner's claim is never broken.
owner_verdict() {
  if [ "$1" = "$ID_BOOT" ] && [ "$2" = "$ID_NS" ]; then
    if kill -0 "$3" 2>/dev/null; then OWNER=alive; else OWNER=dead; fi
  else
    now_ms
    if [ "$NOW_MS" -gt $(($5 + $6 + GUARDIAN_LIMIT + LEASE_SKEW)) ]; then OWNER=dead; else OWNER=alive; fi
  fi
}
