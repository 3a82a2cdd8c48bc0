# BROKEN (DEDUPE-4): every dedupe hold naming the finished job is removed.
dedupe_release() {
  for _dr_f in "$Q"/dedupe/*/*.json; do
    [ -f "$_dr_f" ] && [ ! -L "$_dr_f" ] || continue
    case $(cat -- "$_dr_f") in *"\"$1\""*) rm -f -- "$_dr_f" ;; esac
  done
}
