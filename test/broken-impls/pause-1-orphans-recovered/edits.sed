# BROKEN (PAUSE-1): a paused consumer still breaks orphans' claims (and then runs them): only queued jobs are held back.
/^    PASS_PAUSED=1$/{n;s/^    return 0$/    :/}
/^      _cp_orphan=1$/{n;s/$/\n    if [ "$PASS_PAUSED" = 1 ] \&\& [ "$_cp_orphan" = 0 ]; then continue; fi/}
