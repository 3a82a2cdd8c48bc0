# BROKEN (CLAIM-7): a superseded owner stops its command but then finishes
# the job as usual: it reports the killed attempt as failed and publishes
# the receipt, without checking for claim.<g+1>.json first.
. "$_broken_dir/../mutate.sh"
mutate runner.sh run_command 's/superseded) RUN_OUTCOME=superseded ;;/superseded) RUN_OUTCOME=failed ;;/'
mutate consumer.sh finish_receipt '2s/.*/  if false; then/'
mutate consumer.sh finish_end '2s/.*/  if false; then/'
