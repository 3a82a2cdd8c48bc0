# BROKEN (ENQ-1): something is written before the request is known to be valid.
/^  if ! request_read "\$2"; then$/,/^  fi$/d
/^  mkdir -m 700 -- "\$_pr_stage" || /a\  if ! request_read "$2"; then log "invalid request: $RQ_ERR"; _pr_stage_cleanup; return 1; fi
