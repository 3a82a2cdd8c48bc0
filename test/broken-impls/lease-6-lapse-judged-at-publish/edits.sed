# BROKEN (LEASE-6): the lapse is judged when the receipt is published, after the outputs' fsync, not when the command's end was seen: a pause while finishing turns a success into a lost job.
/^  _fr_msg=\$7$/i\
  if [ "$4" = succeeded ] && [ -n "$FINISH_SYNC_OUT" ]; then sync -- "$FINISH_SYNC_OUT" "$FINISH_SYNC_ERR"; if mono_ms && [ $((MONO_MS - _rc_last_mono)) -ge "$CLAIM_LEASE_MS" ]; then set -- "$1" "$2" "$3" lost 125 owner_lost "the lease lapsed before the receipt (LEASE-6, judged at publication)" "$8" "$9" "${10}" "${11}" "${12}"; fi; fi
