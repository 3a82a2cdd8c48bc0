# BROKEN (EXEC-14): the exit status decides the outcome even after fsjob signalled a cancel.
s/^    cancel) RUN_OUTCOME=cancelled ;;$/    cancel) if [ "$RUN_EXIT" = 0 ]; then RUN_OUTCOME=succeeded; else RUN_OUTCOME=cancelled; fi ;;/
