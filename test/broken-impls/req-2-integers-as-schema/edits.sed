# BROKEN (REQ-2): the RFC 8259 reading of a request accepts any JSON number for an integer member.
s/^    JW_INTONLY=1 JW_LENIENT=1 JW_ECHO_K1=payload$/    JW_INTONLY= JW_LENIENT=1 JW_ECHO_K1=payload/
