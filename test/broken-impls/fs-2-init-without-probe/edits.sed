# BROKEN (FS-2): init never tries the filesystem's operations; a queue is created where rename cannot replace a file.
s/^  fs_probe "\$Q\/tmp" || { log "\$PUB_WHY"; return 1; }$/  :/
