# BROKEN (AFTER-1): when finished is judged like succeeded: a dependency that failed cancels a job that runs after it finished.
/^dep_state() {/,/^}/s#^  if \[ "\$2" = finished \]; then DEP=satisfied; return 0; fi$#  :#
