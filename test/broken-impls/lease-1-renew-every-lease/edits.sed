# BROKEN (LEASE-1): the owner renews its lease once per lease_ms instead of every RENEW_INTERVAL (lease_ms / 3)
/^run_command() {/,/^}/s/CLAIM_LEASE_MS \/ 3/CLAIM_LEASE_MS/g
