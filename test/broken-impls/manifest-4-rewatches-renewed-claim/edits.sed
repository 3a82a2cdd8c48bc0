# BROKEN (MANIFEST-4): a renewal seen to change starts a new watch and is forgotten, so one-shot consume waits again for a claim it has seen renewed.
s/^      if \[ "\$_ws_v" = "\$2" \]; then W_SINCE=\$_ws_s W_CHANGED=\$_ws_c; else W_SINCE=\$MONO_MS W_CHANGED=1; fi$/      if [ "$_ws_v" = "$2" ]; then W_SINCE=$_ws_s W_CHANGED=$_ws_c; else W_SINCE=$MONO_MS W_CHANGED=0; fi/
