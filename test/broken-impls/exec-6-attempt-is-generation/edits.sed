# BROKEN (EXEC-6): FSJOB_ATTEMPT is the generation
/^run_command() {/,/^}/s/"FSJOB_ATTEMPT=\$_rc_att"/"FSJOB_ATTEMPT=$_rc_g"/
