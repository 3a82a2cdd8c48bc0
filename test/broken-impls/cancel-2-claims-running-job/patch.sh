# BROKEN (CANCEL-2): cancel finishes a job at once even when its claim is
# open and its owner alive: it claims the next generation over a running
# execution instead of leaving the request to the owner.
. "$_broken_dir/../mutate.sh"
mutate control.sh cmd_cancel 's/\[ "\$J_RECEIPT" = 0 \] && \[ "\$J_OPEN" = 0 \] && /[ "$J_RECEIPT" = 0 ] \&\& /'
