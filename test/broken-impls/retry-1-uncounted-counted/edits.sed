# BROKEN (RETRY-1): counted false is ignored
/^job_attempts() {/,/^}/s/&& \[ "\$R_counted" = false \]; then/\&\& false; then/
