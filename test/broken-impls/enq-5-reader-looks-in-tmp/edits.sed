# BROKEN (ENQ-5): a job still being staged is run from tmp/.
/^consume_pass() {/,/^}/s|^    \[ -d "\$_cp_jd" \] \|\| continue$|    [ -d "$_cp_jd" ] \|\| { _cp_jd=$Q/tmp/$_cp_id; [ -d "$_cp_jd" ]; } \|\| continue|
