# BROKEN (PREEMPT-1): no preemption
/^run_command() {/,/^}/s/if \[ -z "\$_rc_stop" \] && \[ "\$S_preempt" = true \] && \[ -n "\$S_lane" \] && \[ "\$_rc_m" -ge "\$_rc_next_pre" \]; then/if false; then/
