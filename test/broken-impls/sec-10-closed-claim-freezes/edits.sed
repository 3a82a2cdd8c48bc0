# BROKEN (SEC-10): the highest claim's content is read even when a valid end record closed it; an invalid one freezes the job.
s/^    job_scan "\$_cp_jd"$/&\n    if [ "$J_G" -gt 0 ] \&\& ! rec_read "$_cp_jd\/claim.$J_G.json" claim "$_cp_id" "$J_G"; then log "$_cp_jd\/claim.$J_G.json: invalid; the job is left alone"; SKIP_IDS="$SKIP_IDS $_cp_id"; continue; fi/
