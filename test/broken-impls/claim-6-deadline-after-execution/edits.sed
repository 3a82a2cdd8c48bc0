# BROKEN (CLAIM-6): the queue deadline applies after an execution
/^decide() {/,/^}/s/if \[ -n "\$S_deadline" \] && \[ -z "\$J_EXECS" \] && /if [ -n "$S_deadline" ] \&\& /
