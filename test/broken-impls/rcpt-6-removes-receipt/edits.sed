# BROKEN (RCPT-6): an existing receipt is removed
/^finish_receipt() {/,/^}/s/^    1) log "\$_fr_jd: already finished by someone else (RCPT-3)"; ready_remove/    1) rm -f -- "$_fr_jd\/receipt.json"; ready_remove/
