# BROKEN (DELAY-1): a delayed start is also due once not_before_ms - created_ms has passed on the consumer's monotonic clock, as RETRY-4 makes a retry due, so a wall clock that is behind lets a job start before its instant.
s/^      elif \[ "\$S_OK" = 1 \] && \[ -n "\$S_notbefore" \] && \[ "\$NOW_MS" -lt "\$S_notbefore" \]; then$/      elif [ "$S_OK" = 1 ] \&\& [ -n "$S_notbefore" ] \&\& [ "$NOW_MS" -lt "$S_notbefore" ] \&\& ! retry_due "d.$_cp_id" "$S_created" "$S_notbefore"; then/
s/^          PASS_NEXT=\$S_notbefore$/          PASS_NEXT=$((NOW_MS + RETRY_LEFT))/
