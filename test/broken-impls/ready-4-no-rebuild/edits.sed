# BROKEN (READY-4): ready_rebuild only removes, never creates.
/^ready_rebuild() {/,/^}/s|^    if create_excl "\$Q/ready/\$P-\$_rb_id"; then$|    if false; then|
