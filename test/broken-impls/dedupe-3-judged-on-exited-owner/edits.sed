# BROKEN (DEDUPE-3): a staged hold whose owner is judged dead is free at once, without the last look at jobs/ (the producer may have published and exited in between).
s/\[ "\$OWNER" = dead \] && _hh_staged=$/[ "$OWNER" = dead ] \&\& return 1/
