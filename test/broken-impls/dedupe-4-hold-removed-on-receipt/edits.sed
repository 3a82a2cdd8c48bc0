# BROKEN (DEDUPE-4): the highest hold is removed (dedupe_release, patch.sh).
s|^    0) ready_remove "\$_fr_id"; return 0 ;;$|    0) ready_remove "$_fr_id"; dedupe_release "$_fr_id"; return 0 ;;|
