# BROKEN (EXEC-6): every command runs as `env -i NAME=VALUE... sh -c 'exec "$@"'`, and that sh resets IFS, OPTIND and PPID and exports PWD.
s/^    \*=\*)$/    *)/
s/^      set -- "\$@" \/bin\/sh -c "\$EQUALS_SCRIPT" sh$/      set -- "$@" \/bin\/sh -c 'shift 4; exec "$@"' sh/
