# BROKEN (EXEC-2): released before the exec record
/^run_command() {/,/^}/s/^  rec_exec "\$_rc_id" "\$_rc_g"/  printf '\\n' >\&6; rec_exec "$_rc_id" "$_rc_g"/
