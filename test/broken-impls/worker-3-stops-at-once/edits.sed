# BROKEN (WORKER-3): on SIGTERM the consumer stops its running attempt at once instead of giving it CANCEL_GRACE to end on its own
/^run_command() {/,/^}/s/SHUTDOWN_AT + CANCEL_GRACE/SHUTDOWN_AT/
