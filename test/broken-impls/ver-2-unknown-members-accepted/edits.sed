# BROKEN (VER-2): unknown members of a known minor are accepted.
/^rec_read() {/,/^}/s|^  if \[ -n "\$_rr_unknown" \] && \[ "\$_rr_minor" -le 2 \]; then$|  if false; then|
