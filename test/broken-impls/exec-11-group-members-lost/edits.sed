# BROKEN (EXEC-11): the bug fsjob-sh had: group_members compares each /proc line against $1 after set -- replaced it, so members a leader leaves in its group are never found and never swept (and a leaderless group looks stopped, ID-8)
/^group_members() {/,/^}/s/"\$_gm_group"/"$1"/; s/ \$_gm_group / $1 /
