# BROKEN (CANCEL-2): cancel finishes a job at once even when its claim is open with a live owner: it claims the next generation over the running execution
/^cancel_one() {/,/^}/s/\[ "\$J_RECEIPT" = 0 \] && \[ "\$J_OPEN" = 0 \] && /[ "$J_RECEIPT" = 0 ] \&\& /
