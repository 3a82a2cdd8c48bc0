# BROKEN (LEASE-3): the 1.0 rule: no watch of the renewal on the monotonic clock.
/^    lease_watch "\$2.\$3" "\$CLAIM_RENEWED" "\$CLAIM_LEASE"$/d
