# BROKEN (WORKER-2): the guardian is told the group is done as soon as its leader exits, before EXEC-11 has stopped what the leader left in it.
s/^  # EXEC-11: nothing of the job runs after its attempt ends\.$/  guardian_tell "- $_rc_lp"\n&/
