# BROKEN (CANCEL-3): the owner looks for cancel records only once the attempt has run 5 s (a slow control loop), so a request waits 5 s instead of CONTROL_LATENCY
/^run_command() {/,/^}/s/^    if \[ -e "\$_rc_jd\/cancel-force.json" \] || \[ -L "\$_rc_jd\/cancel-force.json" \]; then$/    if [ "$NOW_MS" -ge $((RUN_STARTED + 5000)) ] \&\& { [ -e "$_rc_jd\/cancel-force.json" ] || [ -L "$_rc_jd\/cancel-force.json" ]; }; then/
/^run_command() {/,/^}/s/^    elif \[ -z "\$_rc_stop" \] && {/    elif [ -z "$_rc_stop" ] \&\& [ "$NOW_MS" -ge $((RUN_STARTED + 5000)) ] \&\& {/
