# BROKEN (EXEC-11): members left in the group when the leader exits get SIGKILL at once, without SIGTERM and kill_grace_ms
/^run_command() {/,/^}/s/kill -s TERM -- "-\$_rc_lp" 2>\/dev\/null/kill -s KILL -- "-$_rc_lp" 2>\/dev\/null/
