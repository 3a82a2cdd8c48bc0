# BROKEN (READY-1): consume_pass does not look for the receipt before claiming.
/^consume_pass() {/,/^}/s|^    if \[ "\$J_RECEIPT" = 1 \]; then$|    if false; then|
# ... and keeps the entries of finished jobs at start, so the entry is still there to be trusted.
/^ready_rebuild() {/,/^}/s|^    if \[ -e "\$Q/jobs/\$_rb_id/receipt.json" \]; then$|    if false; then|
