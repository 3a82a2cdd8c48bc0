# BROKEN (EXEC-3): a failed exec publication is ignored
/^run_command() {/,/^}/s/^  if ! pub_link "\$_rc_jd" "exec.\$_rc_g.json" "\$REC"; then$/  if ! { pub_link "$_rc_jd" "exec.$_rc_g.json" "$REC" || true; }; then/
