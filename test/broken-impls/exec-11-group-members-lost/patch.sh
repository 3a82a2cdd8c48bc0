# BROKEN (EXEC-11, ID-8): the bug fsjob-sh had until this variant was written.
# group_members compares each /proc line against $1 after `set --` replaced
# it, so it never finds a member: members a leader leaves in its group are
# never swept, and a group whose leader exited while members live is judged
# stopped.
. "$_broken_dir/../mutate.sh"
mutate ident.sh group_members 's/"\$_gm_group"/"$1"/; s/ \$_gm_group / $1 /'
