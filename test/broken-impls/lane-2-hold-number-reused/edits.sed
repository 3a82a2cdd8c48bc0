# BROKEN (LANE-2): no listing after a lane hold's link (dedupe keys keep theirs), so a number removed below a newer hold is taken again.
s/^        \[ "\$HOLD_N" -gt "\$_ht_next" \] && continue$/        [ "$HOLD_KIND" = dedupe ] \&\& [ "$HOLD_N" -gt "$_ht_next" ] \&\& continue/
