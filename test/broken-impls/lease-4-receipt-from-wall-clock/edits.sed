# BROKEN (LEASE-4): finished_ms is the wall clock now, not at least the last instant written plus the monotonic time since.
/^finish_receipt() {/,/^}/s/^  gen_time_ms "\${10}"$/  now_ms/
