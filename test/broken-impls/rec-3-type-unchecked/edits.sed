# BROKEN (REC-3): no type check.
/^rec_read() {/,/^}/s|^  if \[ "\$R_type" != "\$2" \]; then$|  if false; then|
