# BROKEN (DEDUPE-2): the hold number is not n + 1.
s|_ht_next=\$((HOLD_N + 1))|_ht_next=1|
