# BROKEN (DEDUPE-1): a held key never refuses.
s|if \[ "\$HOLD_N" -gt 0 \] && hold_is_held "\$HOLD_N"; then|if false; then|
