# BROKEN (FS-2): a link the filesystem refused (EPERM, ENOSYS) is taken as a record another process linked first.
s/^    PUB_WHY="cannot link \$1\/\$2 (FS-2: the filesystem may lack hard links)"$/    return 1/
