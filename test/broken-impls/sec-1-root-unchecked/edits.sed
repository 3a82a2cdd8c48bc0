# BROKEN (SEC-1): the root is not checked (its subdirectories still are).
/^queue_open() {/,/^}/s|^  fs_trusted \|\| { log "\$Q: \$FS_WHY (SEC-1)"; return 1; }$|  :|
