# BROKEN (PUB-8): fs_mkdir creates directories 0755 and leaves them so.
s|    mkdir -m 700 -- "\$1" 2>/dev/null \|\| true|    mkdir -m 755 -- "$1" 2>/dev/null \|\| true|
s|\*) \[ "\$FS_UID" = "\$Q_UID" \] && chmod 700 -- "\$1" ;;|*) : ;;|
