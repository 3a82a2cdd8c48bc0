# BROKEN (REQ-1): stdin_text and stdin_base64 do not exclude each other.
/stdin_text and stdin_base64 exclude each other (REQ-1)/s|; return 1 ;; esac ;;|;; esac ;;|
