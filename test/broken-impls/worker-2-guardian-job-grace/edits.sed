# BROKEN (WORKER-2): the guardian's TERM-to-KILL grace is the job's longest kill_grace_ms, not GUARDIAN_GRACE.
s/^GUARDIAN_GRACE=3000$/GUARDIAN_GRACE=300000/
