# BROKEN (GATE-1): a held job is published at jobs/<id>, where a 1.1 consumer runs it.
/^cmd_produce() {/,/^}/s#^  \[ "\$_pr_gated" = true \] && _pr_name=\$_pr_id.gated$#  :#
