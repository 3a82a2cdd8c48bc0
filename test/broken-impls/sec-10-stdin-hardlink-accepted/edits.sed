# BROKEN (SEC-10): no look at the link count of stdin.
s/^    elif \[ "\$FS_NLINK" != 1 \]; then$/    elif false; then/
