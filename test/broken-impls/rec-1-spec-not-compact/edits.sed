# BROKEN (REC-1): not compact form.
s|_pr_head="{\$F10,\\"type\\":\\"spec\\",|_pr_head="{$F10,\\"type\\": \\"spec\\",|
