# BROKEN (DEDUPE-5): publishes however long ago the dedupe hold was taken.
s/^  if \[ -n "\$_pr_hold_mono" \] && mono_ms && /  if false \&\& mono_ms \&\& /
