# BROKEN (CLAIM-3): every open claim is broken
/^consume_pass() {/,/^}/s/^      claim_verdict "\$_cp_jd" "\$_cp_id" "\$J_G"$/      OWNER=dead/
/^cmd_recover() {/,/^}/s/^    claim_verdict "\$_rv_jd" "\$_rv_id" "\$J_G"$/    OWNER=dead/
