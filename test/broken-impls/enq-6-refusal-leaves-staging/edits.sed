# BROKEN (ENQ-6): the refusal path does not remove tmp/<id>/.
/refused: dedupe key held by job/{n;s|_pr_stage_cleanup|: _pr_stage_cleanup|}
