# BROKEN (LEASE-4): heartbeat_ms is the wall clock now, not at least the last renewal plus the monotonic time since.
/^run_command() {/,/^}/s/^      _rc_hb=\$NOW_MS$/      now_ms; _rc_hb=$NOW_MS/
