# BROKEN (EXEC-3): exec.<g>.json's directory fsync is left pending, as a claim's is, and done by the next publication: after the release
/^run_command() {/,/^}/s|^  if ! pub_link "\$_rc_jd" "exec.\$_rc_g.json" "\$REC"; then$|  PUB_DEFER=1; pub_link "$_rc_jd" "exec.$_rc_g.json" "$REC"; _rc_pl=$?; PUB_DEFER=; if [ "$_rc_pl" != 0 ]; then|
