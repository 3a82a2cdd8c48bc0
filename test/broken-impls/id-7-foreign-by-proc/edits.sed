# BROKEN (ID-7): foreign owners judged by /proc
/^owner_verdict() {/,/^}/s/^  if \[ "\$1" = "\$ID_BOOT" \] && \[ "\$2" = "\$ID_NS" \]; then$/  if :; then/
