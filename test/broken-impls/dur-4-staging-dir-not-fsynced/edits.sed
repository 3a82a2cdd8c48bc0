# BROKEN (DUR-4): tmp/<id>/ is not fsynced after its spec record and stdin are created (ENQ step 4), so the publishing rename can be durable without them
s|^\(    sync -- "\$_pr_stage/stdin" "\$_pr_stage/spec.json"\) "\$_pr_stage" \(.*\)$|\1 \2|
s|^\(    sync -- "\$_pr_stage/spec.json"\) "\$_pr_stage" \(.*\)$|\1 \2|
