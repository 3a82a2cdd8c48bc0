# BROKEN (RCPT-2, I4): the receipt is published first and the outputs it
# describes are written afterwards (here: set aside, receipt linked, then
# copied back, with no fsync). The final state looks right; a crash between
# the receipt and the copy leaves a receipt describing bytes that are not there.
finish_receipt() {
  if [ -e "$1/claim.$(($3 + 1)).json" ] || [ -L "$1/claim.$(($3 + 1)).json" ]; then
    return 1
  fi
  _fr_msg=$7
  now_ms
  rec_receipt "$2" "$3" "$4" "$5" "$6" "$_fr_msg" "$8" "$9" "${10}" "$NOW_MS" "${11}" "${12}"
  _fr_jd=$1 _fr_id=$2
  _fr_late=
  for _fr_f in "$FINISH_SYNC_OUT" "$FINISH_SYNC_ERR"; do
    [ -n "$_fr_f" ] && [ -s "$_fr_f" ] && [ ! -L "$_fr_f" ] || continue
    _fr_keep=$(mktemp) || return 2
    cat -- "$_fr_f" > "$_fr_keep" && : > "$_fr_f"
    _fr_late="$_fr_late $_fr_keep:$_fr_f"
  done
  FINISH_SYNC_OUT= FINISH_SYNC_ERR=
  pub_link "$_fr_jd" receipt.json "$REC"
  _fr_rc=$?
  for _fr_pair in $_fr_late; do
    cat -- "${_fr_pair%%:*}" >> "${_fr_pair#*:}"
    rm -f -- "${_fr_pair%%:*}"
  done
  case $_fr_rc in
    0|1) ready_remove "$_fr_id"; return 0 ;;
    *) return 2 ;;
  esac
}
