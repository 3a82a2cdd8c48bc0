# BROKEN (LEASE-6): no check of the lease's lapse, during or after the command.
s/^    if \[ "\$_rc_stop" != superseded \] \&\& \[ "\$_rc_stop" != fenced \] \&\& \[ "\$_rc_m" -gt 0 \] \&\&$/    if false \&\&/
s/^  if \[ -z "\$_rc_stop" \] \&\& mono_ms \&\& \[ \$((MONO_MS - _rc_last_mono)) -ge "\$CLAIM_LEASE_MS" \]; then$/  if false; then/
