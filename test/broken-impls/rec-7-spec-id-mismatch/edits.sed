# BROKEN (REC-7): the id inside the spec differs from its directory name.
s|\\"id\\":\\"\$_pr_id\\"|\\"id\\":\\"$_pr_ns-0123456789abcdef\\"|
