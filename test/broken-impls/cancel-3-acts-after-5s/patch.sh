# BROKEN (CANCEL-3): the owner looks for cancel records only once the
# attempt has run 5 s (a slow control loop), so a request can wait 5 s
# instead of CONTROL_LATENCY (2 s).
. "$_broken_dir/../mutate.sh"
mutate runner.sh run_command 's/^    if \[ -e "\$_rc_jd\/cancel-force.json" \] || \[ -L "\$_rc_jd\/cancel-force.json" \]; then$/    if [ "$NOW_MS" -ge $((RUN_STARTED + 5000)) ] \&\& { [ -e "$_rc_jd\/cancel-force.json" ] || [ -L "$_rc_jd\/cancel-force.json" ]; }; then/; s/^    elif \[ -z "\$_rc_stop" \] \&\& {/    elif [ -z "$_rc_stop" ] \&\& [ "$NOW_MS" -ge $((RUN_STARTED + 5000)) ] \&\& {/'
