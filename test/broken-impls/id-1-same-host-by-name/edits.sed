# BROKEN (ID-1): same host by name
/^claim_verdict() {/,/^}/s/^  if \[ "\$R_owner_boot_id" != "\$ID_BOOT" \] || \[ "\$R_owner_pid_ns" != "\$ID_NS" \]; then$/  if [ "$R_owner_host" != "$ID_HOST" ]; then/
/^claim_verdict() {/,/^}/s/^    owner_verdict "\$R_owner_boot_id" "\$R_owner_pid_ns" "\$R_owner_pid"/    owner_verdict "$ID_BOOT" "$ID_NS" "$R_owner_pid"/
