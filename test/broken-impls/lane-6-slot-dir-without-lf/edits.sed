# BROKEN (LANE-6): slot k is taken in the directory of the SHA-256 of the key and k without the line feed.
/^hold_dir_of() {/,/^}/s#sha256_str "\$2\$J_NL\$HOLD_SLOT"#sha256_str "$2$HOLD_SLOT"#
