# BROKEN (AFTER-3): a pending dependency is taken as satisfied: a job runs while the job it runs after still runs.
/^gate_verdict() {/,/^}/s#^      pending) \[ -n "\$_gv_await" \] || _gv_await=\$_gv_job ;;$#      pending) ;;#
