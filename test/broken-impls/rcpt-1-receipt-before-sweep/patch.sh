# BROKEN (RCPT-1): the members a leader left in its group are swept only
# after the receipt is published, so a receipt can exist while part of the
# execution still runs.
. "$_broken_dir/../mutate.sh"
mutate runner.sh run_command 's/^  kill -s 0 -- "-\$_rc_lp" 2>\/dev\/null && group_members "\$_rc_lp"$/  _late_lp=$_rc_lp/'
mutate consumer.sh finish_receipt 's/^  pub_link "\$_fr_jd" receipt.json "\$REC" "\$@"$/  pub_link "$_fr_jd" receipt.json "$REC" "$@"; _fr_rc=$?; _late_sweep; (exit $_fr_rc)/'
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
