# BROKEN (DEDUPE-2): no listing after a dedupe hold's link (lanes keep theirs), so a number removed below a newer hold is taken again.
s/^        \[ "\$HOLD_N" -gt "\$_ht_next" \] && continue$/        [ "$HOLD_KIND" = lane ] \&\& [ "$HOLD_N" -gt "$_ht_next" ] \&\& continue/
