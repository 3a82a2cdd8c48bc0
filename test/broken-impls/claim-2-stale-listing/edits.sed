# BROKEN (CLAIM-2): an old listing
/^consume_pass() {/,/^}/{/^    PASS_DID=1$/{n;s/^    return 0$/    continue/;}}
