# BROKEN (LANE-2): the execution part of "held" is missing
/^hold_is_held() {/,/^}/s/^  if \[ -e "\$_hh_jd\/exec.\$_hh_gen.json" \] || \[ -L "\$_hh_jd\/exec.\$_hh_gen.json" \]; then$/  if false; then/
