# BROKEN (TEMP-2): tmp/ entries are removed by age alone.
s/^    if is_job_id "\$_rv_n" \&\& { \[ -e "\$Q\/jobs\/\$_rv_n" \] || \[ -L "\$Q\/jobs\/\$_rv_n" \]; }; then$/    if false; then/
