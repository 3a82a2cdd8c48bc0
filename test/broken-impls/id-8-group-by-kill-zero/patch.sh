# BROKEN (ID-8): a recorded group is judged running while kill(-pgid, 0)
# succeeds, without comparing the leader's start: a pgid whose number now
# leads another group keeps the orphan unproven forever.
group_state() {
  if kill -s 0 -- "-$1" 2>/dev/null; then GROUP=running; else GROUP=stopped; fi
}
