# BROKEN (PUB-9): no check that jobs/<id> is free before the publishing rename, which silently replaces an empty directory there.
s|^  if \[ -e "\$Q/jobs/\$_pr_id" \] \|\| \[ -L "\$Q/jobs/\$_pr_id" \] \|\| \[ -e "\$Q/jobs/\$_pr_name" \] \|\| \[ -L "\$Q/jobs/\$_pr_name" \]; then$|  if false; then|
