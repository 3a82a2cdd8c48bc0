# BROKEN (PREEMPT-1): the lane of the waiter is not compared
/^preempt_waiter() {/,/^}/s/\[ "\$R_lane" = "\$2" \] && \[ "\$R_preemptible" = false \] && return 0/[ -n "$R_lane" ] \&\& [ "$R_preemptible" = false ] \&\& return 0/
