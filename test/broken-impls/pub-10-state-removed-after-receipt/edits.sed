# BROKEN (PUB-10): a finished job's heartbeat records are tidied away after its receipt
/^finish_receipt() {/,/^}/s|^    0) ready_remove "\$_fr_id"; return 0 ;;$|    0) ready_remove "$_fr_id"; rm -f -- "$_fr_jd"/state.*.json; return 0 ;;|
