# BROKEN (PAUSE-1): pause.json is never looked at.
/^consume_pass() {/,/^}/s#^  if \[ -e "\$Q/pause.json" \] || \[ -L "\$Q/pause.json" \]; then$#  if false; then#
