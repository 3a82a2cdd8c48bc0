# BROKEN (LANE-4): no look at the lane before the claim.
s/^      lane_busy_for "\$_cp_id" "\$S_lane" \&\& continue$/      :/
