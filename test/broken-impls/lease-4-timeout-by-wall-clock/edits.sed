# BROKEN (LEASE-4): the timeout's deadline is a wall-clock instant.
/^run_command() {/,/^}/s/^  _rc_deadline=\$((_rc_m + S_timeout))$/  _rc_deadline=$((NOW_MS + S_timeout))/
/^run_command() {/,/^}/s/\[ "\$_rc_m" -ge "\$_rc_deadline" \]/[ "$NOW_MS" -ge "$_rc_deadline" ]/
