# BROKEN (SEC-7): is_gen accepts leading zeros and 0.
/^is_gen() {/,/^}/s/^    \[1-9\]|/    0[0-9]*|[1-9]|/
