# BROKEN (RECOV-2): consume skips every job with an open claim, dead owner
# or not; only the recover command recovers orphans.
. "$_broken_dir/../mutate.sh"
mutate consumer.sh consume_pass 's/^      \[ "\$OWNER" = dead \] || continue$/      continue/'
