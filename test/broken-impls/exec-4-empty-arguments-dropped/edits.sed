# BROKEN (EXEC-4): empty arguments are dropped from argv
/^run_command() {/,/^}/s/^    eval "set -- \\"\\$@\\" \\"\\$R_argv_\$_rc_i\\""$/    eval "[ -z \\"\\$R_argv_$_rc_i\\" ] || set -- \\"\\$@\\" \\"\\$R_argv_$_rc_i\\""/
