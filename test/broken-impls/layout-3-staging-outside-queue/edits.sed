# BROKEN (LAYOUT-3): the staging area is outside the queue root.
s|^  _pr_stage=\$Q/tmp/\$_pr_id$|  _pr_stage=${Q%/*}/.staging-$_pr_id|
