# BROKEN (DEDUPE-3): the 1.0 judgement of a staged hold: its owner by a 30 s lease.
s/^      if \[ "\$NOW_MS" -gt \$((_hh_created + DEDUPE_STAGE_MAX + LEASE_SKEW)) \]; then$/      if false; then/
s/^      elif \[ "\$_hh_boot" = "\$ID_BOOT" \] \&\& \[ "\$_hh_ns" = "\$ID_NS" \]; then$/      elif true; then/
