# BROKEN (RECOV-1 step 1): a dead owner's claim is broken without looking at
# its recorded execution, so the orphaned command may still run while the
# job is claimed and run again.
. "$_broken_dir/../mutate.sh"
mutate consumer.sh orphan_stoppable 's/^  \[ "\$J_EXEC" = 1 \] || return 0$/  return 0/'
