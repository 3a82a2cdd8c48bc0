# BROKEN (CLAIM-11): the kind of job is not looked at before the claim.
s/^      \[ "\$S_KIND" = command \] || continue$/      :/
