# BROKEN (SPEC-1): payload in a command job.
s|_pr_cmd="\\"argv\\":\[\$RQ_ARGV\]"|_pr_cmd="\\"argv\\":[$RQ_ARGV],\\"payload\\":null"|
