# BROKEN (EXEC-5): the cwd is judged by its logical path
/^decide() {/,/^}/s/elif cd -P -- "\$S_cwd" 2>\/dev\/null; then/elif cd -L -- "$S_cwd" 2>\/dev\/null; then/
