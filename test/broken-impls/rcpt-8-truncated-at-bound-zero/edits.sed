# BROKEN (RCPT-8): truncated true when the file size is at least the head part of the bound, so a bound of 0 always says truncated.
s/^        \[ "\$_lo_h" -gt 0 \] \&\& \[ "\$FS_SIZE" = "\$_lo_h" \] \&\& _lo_t=true$/        [ "$FS_SIZE" -ge "$_lo_h" ] \&\& _lo_t=true/
