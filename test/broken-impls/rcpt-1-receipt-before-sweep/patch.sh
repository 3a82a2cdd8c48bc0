# BROKEN (RCPT-1): the sweep that edits.sed removes from run_command, done after the receipt.
_late_sweep() {
  [ -n "${_late_lp:-}" ] || return 0
  group_members "$_late_lp"
  if [ "$GM_LIVE" -gt 0 ]; then
    kill -s TERM -- "-$_late_lp" 2>/dev/null
    now_ms
    _ls_kill_at=$((NOW_MS + S_grace))
    while group_members "$_late_lp"; [ "$GM_LIVE" -gt 0 ]; do
      now_ms
      [ "$NOW_MS" -ge "$_ls_kill_at" ] && kill -s KILL -- "-$_late_lp" 2>/dev/null
      sleep 0.05
    done
  fi
  _late_lp=
}
