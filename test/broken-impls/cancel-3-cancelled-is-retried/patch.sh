# BROKEN (CANCEL-3): an attempt stopped by a graceful cancel is counted as
# failed, so a job with attempts left gets an end record and is retried
# (a later owner then finds the cancel record) instead of ending cancelled.
. "$_broken_dir/../mutate.sh"
mutate runner.sh run_command 's/^    cancel) RUN_OUTCOME=cancelled ;;$/    cancel) RUN_OUTCOME=failed ;;/'
