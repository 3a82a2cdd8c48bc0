# BROKEN (CLAIM-9): the GEN_MAX step of CLAIM-6 is skipped.
s/^  if \[ "\$_dc_g" -ge "\$GEN_MAX" \]; then$/  if false; then/
