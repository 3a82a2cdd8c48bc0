# BROKEN (ENQ-7): the spec's size is not checked against RECORD_MAX.
s/^  if \[ "\$FS_SIZE" -gt "\$RECORD_MAX" \]; then$/  if false; then/
