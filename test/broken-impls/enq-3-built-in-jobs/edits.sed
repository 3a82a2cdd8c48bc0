# BROKEN (ENQ-3): no staging, no rename.
s|^  _pr_stage=\$Q/tmp/\$_pr_id$|  _pr_stage=$Q/jobs/$_pr_id|
s|^  if \[ -e "\$Q/jobs/\$_pr_id" \] \|\| \[ -L "\$Q/jobs/\$_pr_id" \] \|\| \[ -e "\$Q/jobs/\$_pr_name" \] \|\| \[ -L "\$Q/jobs/\$_pr_name" \]; then$|  if false; then|
s|^  if ! mv -T -- "\$_pr_stage" "\$Q/jobs/\$_pr_name" 2>/dev/null; then$|  if false; then|
