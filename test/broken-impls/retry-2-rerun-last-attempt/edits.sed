# BROKEN (RETRY-2): attempts used never stop a run
/^decide() {/,/^}/s/\[ "\$ATTEMPTS" -ge "\$S_maxatt" \]/false/
