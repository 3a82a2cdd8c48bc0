# BROKEN (LANE-1): lanes ignored
/^decide() {/,/^}/s/^  if \[ -n "\$S_lane" \]; then$/  if false; then/
/^consume_pass() {/,/^}/s/if \[ "\$_cp_waiting" = queued \] && \[ "\$S_OK" = 1 \] && \[ -n "\$S_lane" \]; then/if false; then/
