# BROKEN (PUB-7): no existence check and no noclobber for the output files.
/^run_command() {/,/^}/s|^    if \[ -e "\$_rc_f" \] \|\| \[ -L "\$_rc_f" \]; then$|    if false; then|
/^run_command() {/,/^}/{/^  set -C$/{N;s/^  set -C\n\(  if ! command exec 4>"\$_rc_out"\)/  set +C\n\1/}}
