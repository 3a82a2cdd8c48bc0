# BROKEN (RECOV-2): consume skips every job with an open claim, dead owner or not; only the recover command recovers orphans
/^consume_pass() {/,/^}/s/^      \[ "\$OWNER" = dead \] || continue$/      continue/
