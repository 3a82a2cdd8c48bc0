# BROKEN (CANCEL-1): a finished job is not refused.
/^cmd_cancel() {/,/^}/s|^  if \[ "\$J_RECEIPT" = 1 \]; then$|  if false; then|
