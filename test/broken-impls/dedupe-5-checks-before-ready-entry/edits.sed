# BROKEN (DEDUPE-5): the bound is checked before the ready entry (and then forgotten), not as the last step before the rename.
s/^  # ENQ-2: the ready entry, before the job is published\.$/  _variant_dedupe_checked || return 1\n&/
