# BROKEN (TEMP-1): no age check.
s|^  \[ \$((_tg_now - FS_MTIME)) -gt \$((TEMP_MAX_AGE / 1000)) \] \|\| return 0$|  :|
