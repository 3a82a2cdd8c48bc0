# BROKEN (DUR-4): the staged stdin is never fsynced (ENQ step 3), so the publishing rename can be durable before its bytes
s|^\(    sync -- \)"\$_pr_stage/stdin" \("\$_pr_stage/spec.json" "\$_pr_stage" .*\)$|\1\2|
