# BROKEN (RCPT-4): the wrong reason code
/^decide() {/,/^}/s/rejected 126 cwd_unusable/rejected 126 stdin_unusable/
