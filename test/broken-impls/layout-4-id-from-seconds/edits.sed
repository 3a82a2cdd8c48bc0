# BROKEN (LAYOUT-4): a coarse clock written as a 19-digit number of seconds.
s|_pr_ns=\$(date +%s%N)|_pr_ns=$(date +%s)|
