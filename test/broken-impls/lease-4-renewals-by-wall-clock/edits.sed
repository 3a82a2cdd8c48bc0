# BROKEN (LEASE-4): the next renewal is due at a wall-clock instant.
/^run_command() {/,/^}/s/^  _rc_next_hb=\$((CLAIM_MONO + CLAIM_LEASE_MS \/ 3))$/  _rc_next_hb=$((CLAIM_MS + CLAIM_LEASE_MS \/ 3))/
/^run_command() {/,/^}/s/\[ "\$_rc_m" -ge "\$_rc_next_hb" \]/[ "$NOW_MS" -ge "$_rc_next_hb" ]/
/^run_command() {/,/^}/s/^      _rc_next_hb=\$((_rc_m + CLAIM_LEASE_MS \/ 3))$/      _rc_next_hb=$((NOW_MS + CLAIM_LEASE_MS \/ 3))/
