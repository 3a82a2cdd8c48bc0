# BROKEN (RCPT-3): an existing receipt is replaced
/^finish_receipt() {/,/^}/s/^    1) log "\$_fr_jd: already finished by someone else (RCPT-3)"; ready_remove/    1) pub_rename "$_fr_jd" receipt.json "$REC"; ready_remove/
