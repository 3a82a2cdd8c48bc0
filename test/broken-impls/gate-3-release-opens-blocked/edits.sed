# BROKEN (GATE-3): a release opens the gate whatever the dependencies say.
/^cmd_release() {/,/^}/s#^  \[ "\$GATE" = open \] || return 0$#  :#
