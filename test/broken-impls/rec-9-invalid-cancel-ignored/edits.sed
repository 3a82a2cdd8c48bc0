# BROKEN (REC-9): a cancel counts only when its record reads valid.
s/^      cancel\.json) \[ "\$J_CANCEL" = force \] || J_CANCEL=graceful ;;$/      cancel.json) rec_read "$1\/cancel.json" cancel "${1##*\/}" \&\& { [ "$J_CANCEL" = force ] || J_CANCEL=graceful; } ;;/
