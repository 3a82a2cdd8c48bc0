# BROKEN (PUB-9): the job is staged under a dot name in tmp/ (a "temporary", so a crashed producer's leftovers look like any stale temp) and renamed from there into jobs/<id>.
s|^  _pr_stage=\$Q/tmp/\$_pr_id$|  _pr_stage=$Q/tmp/.stage-$_pr_id|
