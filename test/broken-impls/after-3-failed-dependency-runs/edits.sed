# BROKEN (AFTER-3): a dependency that can never be satisfied is ignored: the job runs after a failed dependency.
/^gate_verdict() {/,/^}/s#^      never)$#      never_ignored)#
