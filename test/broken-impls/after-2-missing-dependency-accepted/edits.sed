# BROKEN (AFTER-2): a dependency that does not exist is not refused.
/^cmd_produce() {/,/^}/s#^    if \[ "\$PLACE" = missing \]; then$#    if false; then#
