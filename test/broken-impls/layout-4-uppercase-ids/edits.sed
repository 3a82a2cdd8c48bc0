# BROKEN (LAYOUT-4): is_job_id accepts A-F.
/^is_job_id() {/,/^}/s/\[0-9a-f\]/[0-9a-fA-F]/g
