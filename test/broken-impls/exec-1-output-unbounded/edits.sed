# BROKEN (EXEC-1): outputs are not bounded
/^_rc_keep() {/,/^}/s/^  head -c "\$_rc_head"$/  cat/
