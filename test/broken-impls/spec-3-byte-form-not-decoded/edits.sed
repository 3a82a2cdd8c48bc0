# BROKEN (SPEC-3): an argument's or value's byte form reaches the command as its base64 text.
s/\(R_argv_\$4\)=\\\$BF_V"/\1=\\$_rr_b64"/
s/\(R_envv_\$R_envc\)=\\\$BF_V"/\1=\\$_rr_b64"/
