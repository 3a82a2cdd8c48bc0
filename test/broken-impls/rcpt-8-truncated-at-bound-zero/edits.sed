# BROKEN (RCPT-8): truncated true when the file size is at least the bound, so a bound of 0 always says truncated.
s/^        \[ "\${S_maxout:-0}" -gt 0 \] \&\& \[ "\$FS_SIZE" = "\$S_maxout" \] \&\& _lo_t=true$/        [ "$FS_SIZE" -ge "${S_maxout:-0}" ] \&\& _lo_t=true/
