# BROKEN (EXEC-5): the cwd is judged only once its links are resolved, never as written.
s/^  lexical_path "\$S_cwd"$/  LEX_PATH=/
