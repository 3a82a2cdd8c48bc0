# BROKEN (FS-2): init tries the filesystem's operations only after it has linked fsjob.json, so a filesystem that fails them is left with a queue record.
s/^  fs_probe "\$Q\/tmp" || { log "\$PUB_WHY"; return 1; }$/  :/
s/^  pub_link "\$Q" fsjob\.json .*$/&\n  _v_rc=$?; fs_probe "$Q\/tmp" || { log "$PUB_WHY"; return 1; }; (exit $_v_rc)/
