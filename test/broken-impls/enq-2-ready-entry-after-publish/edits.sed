# BROKEN (ENQ-2): a published job has no ready entry for a moment (forever, if the producer dies).
s|^  if ! create_excl "\$_pr_ready"; then$|  if false; then|
/^  _pr_stage=$/a\  create_excl "$_pr_ready"
