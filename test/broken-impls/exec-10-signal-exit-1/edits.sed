# BROKEN (EXEC-10): 1 instead of 128 + n
/^decide() {/,/^}/s/_dc_code=\$((128 + SIGNUM))/_dc_code=1/
