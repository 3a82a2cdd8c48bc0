# BROKEN (LANE-2): a lane hold's link is tried again after every lost race, without bound (dedupe keys keep DEDUPE-2's 100).
s/^  while \[ "\$_ht_try" -lt 100 \]; do$/  while [ "$HOLD_KIND" = lane ] || [ "$_ht_try" -lt 100 ]; do/
