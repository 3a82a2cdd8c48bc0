# BROKEN (ENQ-4): jobs/ is not fsynced after the publishing rename.
s|^  sync -- "\$Q/jobs" \|\| { log "cannot fsync \$Q/jobs"; return 1; }$|  :|
