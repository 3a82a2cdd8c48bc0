# BROKEN (STATUS-1): no retrying status
/^consume_pass() {/,/^}/s/elif \[ "\$J_G" -gt 0 \] && rec_read "\$_cp_jd\/end.\$J_G.json" end "\$_cp_id" "\$J_G" && ! retry_due "\$_cp_id\.\$J_G" "\$R_ended_ms" "\$R_retry_at_ms"; then/elif false; then/
