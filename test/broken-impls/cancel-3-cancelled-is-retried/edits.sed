# BROKEN (CANCEL-3): an attempt stopped by a graceful cancel is counted as failed, so a job with attempts left gets an end record and a retry instead of ending cancelled
/^run_command() {/,/^}/s/^    cancel) RUN_OUTCOME=cancelled ;;$/    cancel) RUN_OUTCOME=failed ;;/
