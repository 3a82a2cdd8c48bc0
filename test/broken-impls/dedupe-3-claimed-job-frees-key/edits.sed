# BROKEN (DEDUPE-3): a claimed (running, retrying) job no longer holds its key.
0,/^    if \[ -d "\$_hh_jd" \] && \[ ! -L "\$_hh_jd" \]; then$/s//    if [ -d "$_hh_jd" ] \&\& [ ! -L "$_hh_jd" ]; then [ -e "$_hh_jd\/claim.1.json" ] \&\& return 1/
