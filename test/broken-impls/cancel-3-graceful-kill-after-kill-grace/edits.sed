# BROKEN (CANCEL-3): a graceful cancel sends SIGKILL after the job's kill_grace_ms instead of CANCEL_GRACE
/^run_command() {/,/^}/s/_rc_stop=cancel _rc_kill_at=\$((_rc_m + CANCEL_GRACE))/_rc_stop=cancel _rc_kill_at=$((_rc_m + S_grace))/
