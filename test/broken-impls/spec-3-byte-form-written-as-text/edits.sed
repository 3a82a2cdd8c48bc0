# BROKEN (SPEC-3): a byte form is published as the string of its base64 text, not as the bytes.
s/{\\"base64\\":\\"\$_rr_b64\\"}/\\"$_rr_b64\\"/g
