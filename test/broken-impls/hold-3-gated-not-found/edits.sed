# BROKEN (HOLD-3): cancel looks at jobs/<id> only: a held job is no such job.
/^cancel_one() {/,/^}/s#^  \[ "\$PLACE" = gated \] && _cn_jd=\$Q/jobs/\$1.gated$#  :#
