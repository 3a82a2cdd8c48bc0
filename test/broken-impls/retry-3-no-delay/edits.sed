# BROKEN (RETRY-3): retry_delay_ms ignored
/^decide() {/,/^}/s/"\$RUN_OUTCOME" true \$((NOW_MS + S_retry))/"$RUN_OUTCOME" true "$NOW_MS"/
