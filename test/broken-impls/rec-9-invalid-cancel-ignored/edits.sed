# BROKEN (REC-9): a cancel counts only when its record reads valid, in both
# places fsjob-sh looks at cancel.json: the job scan (the claim's decision,
# CLAIM-6.2) and the running attempt's control loop (CANCEL-3). Breaking only
# the first left the control loop to cancel the job anyway whenever it looked
# before the command started, so the kill depended on scheduling.
s/^      cancel\.json) \[ "\$J_CANCEL" = force \] || J_CANCEL=graceful ;;$/      cancel.json) rec_read "$1\/cancel.json" cancel "${1##*\/}" "" false \&\& { [ "$J_CANCEL" = force ] || J_CANCEL=graceful; } ;;/
s/^    elif \[ -z "\$_rc_stop" \] && { \[ -e "\$_rc_jd\/cancel\.json" \] || \[ -L "\$_rc_jd\/cancel\.json" \]; }; then$/    elif [ -z "$_rc_stop" ] \&\& { [ -e "$_rc_jd\/cancel.json" ] || [ -L "$_rc_jd\/cancel.json" ]; } \&\& ( rec_read "$_rc_jd\/cancel.json" cancel "$_rc_id" "" false ); then/
