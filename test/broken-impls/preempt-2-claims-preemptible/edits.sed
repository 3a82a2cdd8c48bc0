# BROKEN (PREEMPT-2): no check before claiming a preemptible job
/^consume_pass() {/,/^}/s/if \[ "\$S_preempt" = true \] && preempt_waiter "\$_cp_id" "\$S_lane"; then/if false; then/
