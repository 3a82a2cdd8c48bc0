# BROKEN (EXEC-12): no DRAIN_LIMIT.
s/^      \[ "\$MONO_MS" -lt "\$_rc_drain_end" \] || break$/      :/
