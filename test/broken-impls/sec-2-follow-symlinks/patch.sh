# BROKEN (SEC-2, I6): a record is checked with tests that follow symlinks
# ([ -f ], stat -L), so a symlink planted at a record's name is read through.
fs_check_file() {
  if [ ! -f "$1" ]; then
    FS_WHY=missing
    return 1
  fi
  FS_SIZE=$(stat -L -c %s -- "$1") || { FS_WHY=missing; return 1; }
  [ "$FS_SIZE" -le "$2" ] || { FS_WHY="$FS_SIZE bytes, over the bound of $2 (SEC-4)"; return 1; }
}
