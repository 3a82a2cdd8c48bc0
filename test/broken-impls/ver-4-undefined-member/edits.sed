# BROKEN (VER-4): an undefined member in the spec.
s|_pr_head="{\$F10,\\"type\\":\\"spec\\",|_pr_head="{$F10,\\"type\\":\\"spec\\",\\"origin\\":\\"sh\\",|
