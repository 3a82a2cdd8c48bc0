# BROKEN (HOLD-3): cancel looks at jobs/<id> only: a held job is no such job.
/^cmd_cancel() {/,/^}/s#^  \[ "\$PLACE" = gated \] && _cn_jd=\$Q/jobs/\$2.gated$#  :#
