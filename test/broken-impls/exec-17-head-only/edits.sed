# BROKEN (EXEC-17): output_keep is ignored; every stream keeps its first max_output_bytes.
/^run_command() {/,/^}/s#^  case \${S_keep:-head} in$#  case head in#
