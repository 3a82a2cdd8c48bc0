# BROKEN (EXEC-6): every command runs as `env -i NAME=VALUE... sh -c 'exec "$@"'`, and that sh resets IFS, OPTIND and PPID and exports PWD.
s/^    \*=\*)$/    *)/
s/^      set -- "\$@" "\$NICE_PATH" -n 0 --$/      set -- "$@" \/bin\/sh -c 'exec "$@"' sh/
