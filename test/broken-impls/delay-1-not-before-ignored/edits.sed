# BROKEN (DELAY-1): not_before_ms is never looked at: a delayed job is claimed as soon as it is seen.
/^consume_pass() {/,/^}/s#^      elif \[ "\$S_OK" = 1 \] && \[ -n "\$S_notbefore" \] && \[ "\$NOW_MS" -lt "\$S_notbefore" \]; then$#      elif false; then#
