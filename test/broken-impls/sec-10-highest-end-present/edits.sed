# BROKEN (SEC-10): consume and recover leave a job alone when its highest end record present is invalid.
s/^    job_scan "\$_cp_jd"$/&\n    if variant_top_end_invalid "$_cp_jd" "$_cp_id"; then SKIP_IDS="$SKIP_IDS $_cp_id"; continue; fi/
s/^    job_scan "\$_rv_jd"$/&\n    if variant_top_end_invalid "$_rv_jd" "$_rv_id"; then continue; fi/
