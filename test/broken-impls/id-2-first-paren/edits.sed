# BROKEN (ID-2): fields after the first ")"
/^proc_stat() {/,/^}/s/_ps_r=\${_ps_l##\*) }/_ps_r=${_ps_l#*) }/g
