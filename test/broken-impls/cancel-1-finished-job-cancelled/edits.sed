# BROKEN (CANCEL-1): a finished job is not refused.
/^cancel_one() {/,/^}/s|^  if \[ "\$J_RECEIPT" = 1 \]; then$|  if false; then|
