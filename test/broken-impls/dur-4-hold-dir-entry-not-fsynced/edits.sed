# BROKEN (DUR-4): the hold's key directory's entry in dedupe/ or lanes/ is
# never made durable: pub_link is not asked to fsync the parent.
/^hold_take() {/,/^}/s|^    pub_link "\$HOLD_DIR" "\$_ht_next.json" "\$REC" "\${HOLD_DIR%/\*}"$|    pub_link "$HOLD_DIR" "$_ht_next.json" "$REC"|
