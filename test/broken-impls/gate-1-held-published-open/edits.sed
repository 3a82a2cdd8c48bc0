# BROKEN (GATE-1): a held job is published at jobs/<id>, where a 1.1 consumer runs it.
/^cmd_produce() {/,/^}/s#^  if \[ "\$_pr_gated" = true \]; then$#  if false; then#
