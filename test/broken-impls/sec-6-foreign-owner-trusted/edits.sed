# BROKEN (SEC-6): fs_check_file trusts any owner.
/^fs_check_file() {/,/^}/s|^  fs_trusted \|\| return 1$|  [ $((0$FS_MODE \& 022)) = 0 ] \|\| { FS_WHY="writable by group or others (SEC-5)"; return 1; }|
