# BROKEN (CLAIM-4): a job at generation GEN_MAX is claimed like any other (claim GEN_MAX + 1) when its owner is dead.
s/^    if \[ "\$J_G" -ge "\$GEN_MAX" \]; then$/    if false; then/
