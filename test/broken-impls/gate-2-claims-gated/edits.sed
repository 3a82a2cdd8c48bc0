# BROKEN (GATE-2): a gated job is claimed in place, in jobs/<id>.gated, as if it were open.
/^consume_pass() {/,/^}/s#^    \[ -d "\$_cp_jd" \] || gate_look "\$_cp_id" || :$#    [ -d "$_cp_jd" ] || { [ -d "$_cp_jd.gated" ] \&\& _cp_jd=$_cp_jd.gated; } || :#
