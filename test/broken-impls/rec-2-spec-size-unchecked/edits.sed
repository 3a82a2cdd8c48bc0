# BROKEN (REC-2): no bound on the size of the spec the producer writes.
/^cmd_produce() {/,/^}/s|^  if \[ "\$FS_SIZE" -gt "\$RECORD_MAX" \]; then$|  if false; then|
