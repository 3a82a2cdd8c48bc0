# BROKEN (CLAIM-6): step 0 missing
/^decide() {/,/^}/s/^  if \[ "\$J_RECEIPT" = 1 \]; then$/  if false; then/
