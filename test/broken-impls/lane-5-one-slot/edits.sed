# BROKEN (LANE-5): lane_slots is ignored: every job of a lane takes slot 1 only.
/^spec_load() {/,/^}/s#S_slots=\${R_lane_slots:-1}#S_slots=1#
