# BROKEN (REC-4): an invalid record is acted on (removed).
/^cmd_recover() {/,/^}/s|^      log "\$_rv_f: invalid registration: \$REC_ERR"$|      log "$_rv_f: invalid registration: $REC_ERR"; rm_entry "$_rv_f"|
