# BROKEN (REC-4): the checks are not made in the order REC-4 gives.
/^rec_read() {/,/^}/s|^  if ! _rr_version; then$|  _rr_version; _rr_vok=$?; if false; then|
/^rec_read() {/,/^}/s|^  _rr_rules "\$2" \|\| {|  [ "$_rr_vok" = 0 ] \|\| { REC_ERR="unsupported version '$R_fsjob' (VER-1)"; REC_REASON=unsupported_version; return 1; }; _rr_rules "$2" \|\| {|
