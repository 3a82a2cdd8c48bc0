# BROKEN (SEC-4): no bound on record size.
s|^  \[ "\$FS_SIZE" -le "\$2" \] \|\||  : \|\||
