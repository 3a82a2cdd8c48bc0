# BROKEN (PUB-1): the temporary file is not created exclusively.
/^_pub_tmp() {/,/^}/s/^    set -C$/    set +C/
