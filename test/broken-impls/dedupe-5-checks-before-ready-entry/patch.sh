# BROKEN (DEDUPE-5): the stage bound is checked right after the dedupe hold is taken, not as the last step before the rename, so a producer stopped between its hold and its ready entry publishes late.
_variant_dedupe_checked() {
  if [ -n "$_pr_hold_mono" ] && mono_ms && [ $((MONO_MS - _pr_hold_mono)) -ge "$DEDUPE_STAGE_MAX" ]; then
    log "not published within DEDUPE_STAGE_MAX of taking the dedupe key; refused (DEDUPE-5)"
    _pr_stage_cleanup
    return 1
  fi
  _pr_hold_mono=
  return 0
}
