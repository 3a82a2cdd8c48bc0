# BROKEN (RECOV-4): a dead owner's open claim GEN_MAX is finished at once, without RECOV-1 step 1, trusting CLAIM-9 that nothing was executed.
/^  orphan_stoppable "\$1" "\$2" || return 1$/d
