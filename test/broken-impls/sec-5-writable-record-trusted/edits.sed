# BROKEN (SEC-5): fs_check_file trusts any mode.
/^fs_check_file() {/,/^}/s|^  fs_trusted \|\| return 1$|  [ "$FS_UID" = "$Q_UID" ] \|\| { FS_WHY="owned by uid $FS_UID (SEC-6)"; return 1; }|
