# json.sh - read and write the compact JSON form of fsjob records (REC-1).
#
# Reader: jw_walk TEXT CALLBACK validates that TEXT is exactly one JSON object
# in compact form and reports every value at depth 1 and 2 to CALLBACK:
#
#   CALLBACK KIND DEPTH K1 K2 VALUE
#
#   KIND  s string (VALUE decoded), n number, t true, f false, z null,
#         o / a the start of an object / array, O / A its end (VALUE = count)
#   DEPTH 1 for a member of the record, 2 for a member or element of that,
#         3 one level deeper (then JW_K3 is the name or index at depth 3)
#   K1    the record member's name; K2 the name or index at depth 2 ("" at 1)
#
# Numbers: with JW_INTONLY=1 every number outside the values of the members
# payload and result must be an integer in compact form (REC-1). Arrays and
# objects nest at most NEST_MAX deep (the record object is depth 1).
#
# For strings the callback may also look at JW_RAW (the undecoded text between
# the quotes, which in compact form is already the canonical encoding),
# JW_NUL (1 when the string contained \u0000, which sh cannot hold) and JW_CTL
# (1 when it contained any control character). Deeper values are validated
# but not reported. A callback that returns non-zero stops the walk; it may
# set JW_ERR. After each record member the callback also gets the event
# KIND E, DEPTH 1, with VALUE "OFFSET LENGTH": where the member's value lies
# in TEXT (a producer copies a payload verbatim with it).
#
# How: the text is split on '"' with IFS (linear time), so fields alternate
# between outside-string and inside-string text; an inside field that ends in
# an odd number of backslashes had its quote escaped. Outside fields hold only
# structure and scalars and are tokenised with case patterns. Every step is
# bounded; nothing here forks.
#
# Writer: jstr VALUE sets JS to VALUE as a JSON string literal.

J_NL='
'
J_STRUCT='[][{}:,]*'
JW_LENIENT= JW_ECHO_K1= JW_ECHO= JW_CANON=
NEST_MAX=128
JW_INTONLY=
# Every other constant byte comes from one printf (one fork at startup):
# control characters (J_CTL; J_C_<hex> one by one), the escapes with a short
# form, and the byte patterns of j_utf8_ok.
eval "$(printf 'J_CTL=\047\001\002\003\004\005\006\007\010\011\012\013\014\015\016\017\020\021\022\023\024\025\026\027\030\031\032\033\034\035\036\037\047\nJ_TAB=\047\011\047\nJ_CR=\047\015\047\nJ_BS=\047\010\047\nJ_FF=\047\014\047\nJ_DEL=\047\177\047\nJ_HIGH=\047\200-\377\047\n_J_C=\047[\200-\277]\047\n_J_N=\047[!\200-\277]\047\n_J_A=\047[!\200-\377]\047\n_J_L2=\047[\302-\337]\047\n_J_L3=\047[\340-\357]\047\n_J_L4=\047[\360-\364]\047\n_J_BAD=\047[\300\301\365-\377]\047\n_J_E0=\047\340[\200-\237]\047\n_J_ED=\047\355[\240-\277]\047\n_J_F0=\047\360[\200-\217]\047\n_J_F4=\047\364[\220-\277]\047\nJ_C_01=\047\001\047\nJ_C_02=\047\002\047\nJ_C_03=\047\003\047\nJ_C_04=\047\004\047\nJ_C_05=\047\005\047\nJ_C_06=\047\006\047\nJ_C_07=\047\007\047\nJ_C_08=\047\010\047\nJ_C_09=\047\011\047\nJ_C_0a=\047\012\047\nJ_C_0b=\047\013\047\nJ_C_0c=\047\014\047\nJ_C_0d=\047\015\047\nJ_C_0e=\047\016\047\nJ_C_0f=\047\017\047\nJ_C_10=\047\020\047\nJ_C_11=\047\021\047\nJ_C_12=\047\022\047\nJ_C_13=\047\023\047\nJ_C_14=\047\024\047\nJ_C_15=\047\025\047\nJ_C_16=\047\026\047\nJ_C_17=\047\027\047\nJ_C_18=\047\030\047\nJ_C_19=\047\031\047\nJ_C_1a=\047\032\047\nJ_C_1b=\047\033\047\nJ_C_1c=\047\034\047\nJ_C_1d=\047\035\047\nJ_C_1e=\047\036\047\nJ_C_1f=\047\037\047\n')"

# Lenient (RFC 8259) reading: whitespace, the control characters that are not
# whitespace, and where a token ends.
J_WS=" $J_TAB$J_NL$J_CR"
J_CTL3=$J_C_01$J_C_02$J_C_03$J_C_04$J_C_05$J_C_06$J_C_07$J_C_08$J_C_0b$J_C_0c$J_C_0e$J_C_0f
J_CTL3=$J_CTL3$J_C_10$J_C_11$J_C_12$J_C_13$J_C_14$J_C_15$J_C_16$J_C_17$J_C_18$J_C_19$J_C_1a$J_C_1b$J_C_1c$J_C_1d$J_C_1e$J_C_1f
J_STRUCTW="[][{}:,$J_WS]*"

# --- UTF-8 -------------------------------------------------------------------
# j_utf8_ok TEXT: TEXT is well-formed UTF-8 (RFC 3629: no overlong forms, no
# surrogates, nothing above U+10FFFF). Each invalid shape is a bounded byte
# pattern, so a handful of case patterns decide it without a loop.
j_utf8_ok() {
  case $1 in
    *$_J_BAD*|$_J_C*|*$_J_A$_J_C*) return 1 ;;
    *$_J_L2$_J_C$_J_C*|*$_J_L3$_J_C$_J_C$_J_C*|*$_J_L4$_J_C$_J_C$_J_C$_J_C*) return 1 ;;
    *$_J_L2$_J_N*|*$_J_L2|*$_J_L3$_J_N*|*$_J_L3$_J_C$_J_N*|*$_J_L3|*$_J_L3$_J_C) return 1 ;;
    *$_J_L4$_J_N*|*$_J_L4$_J_C$_J_N*|*$_J_L4$_J_C$_J_C$_J_N*) return 1 ;;
    *$_J_L4|*$_J_L4$_J_C|*$_J_L4$_J_C$_J_C) return 1 ;;
    *$_J_E0*|*$_J_ED*|*$_J_F0*|*$_J_F4*) return 1 ;;
  esac
  return 0
}

# --- string decoding -----------------------------------------------------------
# _jw_decode RAW: sets _jw_s to the decoded string, JW_NUL and JW_CTL; fails on
# any escape REC-1 does not allow (\/, \uXXXX for a non-control character,
# \u0009 where \t exists, uppercase hex).
_jw_decode() {
  JW_NUL=0 JW_CTL=0
  case $1 in
    *\\*) ;;
    *) _jw_s=$1; return 0 ;;
  esac
  set -f
  _jw_difs=$IFS
  IFS='\'
  # shellcheck disable=SC2086
  set -- $1
  IFS=$_jw_difs
  set +f
  _jw_s=$1
  shift
  _jw_plain=0
  for _jw_p do
    if [ "$_jw_plain" = 1 ]; then
      _jw_s=$_jw_s$_jw_p
      _jw_plain=0
      continue
    fi
    case $_jw_p in
      '') _jw_s=$_jw_s'\'; _jw_plain=1 ;;
      '"'*) _jw_s=$_jw_s'"'${_jw_p#?} ;;
      n*) _jw_s=$_jw_s$J_NL${_jw_p#?}; JW_CTL=1 ;;
      t*) _jw_s=$_jw_s$J_TAB${_jw_p#?}; JW_CTL=1 ;;
      r*) _jw_s=$_jw_s$J_CR${_jw_p#?}; JW_CTL=1 ;;
      b*) _jw_s=$_jw_s$J_BS${_jw_p#?}; JW_CTL=1 ;;
      f*) _jw_s=$_jw_s$J_FF${_jw_p#?}; JW_CTL=1 ;;
      u000[0-7]*|u000[be]*|u000f*|u001[0-9a-f]*)
        _jw_u=${_jw_p#u00}
        _jw_rest=${_jw_u#??}
        case $_jw_u in
          0*) _jw_hex=0 ;;
          *) _jw_hex=1 ;;
        esac
        _jw_u=${_jw_u#?}
        case $_jw_u in
          0*) _jw_hex=${_jw_hex}0 ;; 1*) _jw_hex=${_jw_hex}1 ;; 2*) _jw_hex=${_jw_hex}2 ;;
          3*) _jw_hex=${_jw_hex}3 ;; 4*) _jw_hex=${_jw_hex}4 ;; 5*) _jw_hex=${_jw_hex}5 ;;
          6*) _jw_hex=${_jw_hex}6 ;; 7*) _jw_hex=${_jw_hex}7 ;; 8*) _jw_hex=${_jw_hex}8 ;;
          9*) _jw_hex=${_jw_hex}9 ;; a*) _jw_hex=${_jw_hex}a ;; b*) _jw_hex=${_jw_hex}b ;;
          c*) _jw_hex=${_jw_hex}c ;; d*) _jw_hex=${_jw_hex}d ;; e*) _jw_hex=${_jw_hex}e ;;
          f*) _jw_hex=${_jw_hex}f ;;
        esac
        JW_CTL=1
        if [ "$_jw_hex" = 00 ]; then
          JW_NUL=1
          if [ -n "$_jw_nulout" ]; then
            printf '%s\000' "$_jw_s"
            _jw_s=
          fi
          _jw_s=$_jw_s$_jw_rest
        else
          eval "_jw_s=\$_jw_s\$J_C_$_jw_hex\$_jw_rest"
        fi
        ;;
      *) return 1 ;;
    esac
  done
  # A raw string cannot end inside an escape: "\" alone would have escaped
  # the closing quote, so a trailing plain=1 only ever means "\\" at the end.
  return 0
}

# --- lenient string decoding (requests, REQ-1) -------------------------------------
# RFC 8259 allows \/, \uXXXX for any character (either case) and surrogate
# pairs. _jw_decode_lenient RAW sets _jw_s (the bytes) and _jw_c (the same
# string in compact form, REC-1: what a record holds). A code point becomes
# UTF-8 through a table of the bytes, built on first use.

_j_bytes_init() {
  [ -n "${J_B_80:-}" ] && return 0
  _jb_f=
  _jb_i=32
  while [ "$_jb_i" -le 255 ]; do
    if :; then
      _j_hex2 "$_jb_i"
      case $_jb_i in
        39) _jb_f="${_jb_f}J_B_27=\"'\"\\n" ;;
        92) _jb_f="${_jb_f}J_B_5c='\\\\'\\n" ;;
        *) _jb_f="${_jb_f}J_B_$_jh=\\047\\$((_jb_i / 64))$((_jb_i / 8 % 8))$((_jb_i % 8))\\047\\n" ;;
      esac
    fi
    _jb_i=$((_jb_i + 1))
  done
  eval "$(printf "$_jb_f")"
}

# _j_hex2 N: _jh = N (0..255) as two lowercase hex digits.
_j_hex2() {
  _jh=
  for _jh_d in $(($1 / 16)) $(($1 % 16)); do
    case $_jh_d in
      10) _jh=${_jh}a ;; 11) _jh=${_jh}b ;; 12) _jh=${_jh}c ;;
      13) _jh=${_jh}d ;; 14) _jh=${_jh}e ;; 15) _jh=${_jh}f ;;
      *) _jh=$_jh$_jh_d ;;
    esac
  done
}

# _j_first TEXT: _j1 = the first character of TEXT if it is a hex digit.
_j_first() {
  case $1 in
    [0-9]*) _j1=${1%"${1#?}"} ;;
    [a-fA-F]*)
      case $1 in
        [aA]*) _j1=a ;; [bB]*) _j1=b ;; [cC]*) _j1=c ;;
        [dD]*) _j1=d ;; [eE]*) _j1=e ;; *) _j1=f ;;
      esac ;;
    *) return 1 ;;
  esac
}

# _j_cp_append CP: append code point CP to _jw_s and _jw_c.
_j_cp_append() {
  if [ "$1" -lt 32 ]; then
    JW_CTL=1
    case $1 in
      8) _jw_s=$_jw_s$J_BS _jw_c=$_jw_c'\b' ;;
      9) _jw_s=$_jw_s$J_TAB _jw_c=$_jw_c'\t' ;;
      10) _jw_s=$_jw_s$J_NL _jw_c=$_jw_c'\n' ;;
      12) _jw_s=$_jw_s$J_FF _jw_c=$_jw_c'\f' ;;
      13) _jw_s=$_jw_s$J_CR _jw_c=$_jw_c'\r' ;;
      0) JW_NUL=1 _jw_c=$_jw_c'\u0000' ;;
      *)
        _j_hex2 "$1"
        eval "_jw_s=\$_jw_s\$J_C_$_jh"
        _jw_c=$_jw_c'\u00'$_jh ;;
    esac
    return 0
  fi
  case $1 in
    34) _jw_s=$_jw_s'"' _jw_c=$_jw_c'\"'; return 0 ;;
    92) _jw_s=$_jw_s'\' _jw_c=$_jw_c'\\'; return 0 ;;
  esac
  _j_bytes_init
  if [ "$1" -lt 128 ]; then
    set -- "$1"
  elif [ "$1" -lt 2048 ]; then
    set -- $((192 + $1 / 64)) $((128 + $1 % 64))
  elif [ "$1" -lt 65536 ]; then
    set -- $((224 + $1 / 4096)) $((128 + $1 / 64 % 64)) $((128 + $1 % 64))
  else
    set -- $((240 + $1 / 262144)) $((128 + $1 / 4096 % 64)) $((128 + $1 / 64 % 64)) $((128 + $1 % 64))
  fi
  for _jcp_b do
    _j_hex2 "$_jcp_b"
    eval "_jw_s=\$_jw_s\$J_B_$_jh _jw_c=\$_jw_c\$J_B_$_jh"
  done
}

_jw_decode_lenient() {
  JW_NUL=0 JW_CTL=0
  case $1 in
    *\\*) ;;
    *) _jw_s=$1 _jw_c=$1; return 0 ;;
  esac
  set -f
  _jw_difs=$IFS
  IFS='\'
  # shellcheck disable=SC2086
  set -- $1
  IFS=$_jw_difs
  set +f
  _jw_s=$1 _jw_c=$1
  shift
  _jw_plain=0 _jw_hi=
  for _jw_p do
    if [ "$_jw_plain" = 1 ]; then
      [ -z "$_jw_hi" ] || return 1
      _jw_s=$_jw_s$_jw_p _jw_c=$_jw_c$_jw_p
      _jw_plain=0
      continue
    fi
    case $_jw_p in
      u????*)
        _jw_u=${_jw_p#u}
        _jw_h=
        for _jw_i in 1 2 3 4; do
          _j_first "$_jw_u" || return 1
          _jw_h=$_jw_h$_j1
          _jw_u=${_jw_u#?}
        done
        _jw_cp=$((0x$_jw_h))
        if [ -n "$_jw_hi" ]; then
          # The low half of a surrogate pair must follow at once.
          [ "$_jw_cp" -ge 56320 ] && [ "$_jw_cp" -le 57343 ] || return 1
          _j_cp_append $((65536 + (_jw_hi - 55296) * 1024 + _jw_cp - 56320))
          _jw_hi=
        elif [ "$_jw_cp" -ge 55296 ] && [ "$_jw_cp" -le 56319 ]; then
          [ -z "$_jw_u" ] || return 1
          _jw_hi=$_jw_cp
          continue
        elif [ "$_jw_cp" -ge 56320 ] && [ "$_jw_cp" -le 57343 ]; then
          return 1
        else
          _j_cp_append "$_jw_cp"
        fi
        _jw_s=$_jw_s$_jw_u _jw_c=$_jw_c$_jw_u
        continue ;;
    esac
    [ -z "$_jw_hi" ] || return 1
    case $_jw_p in
      '') _jw_s=$_jw_s'\' _jw_c=$_jw_c'\\'; _jw_plain=1 ;;
      '"'*) _jw_s=$_jw_s'"'${_jw_p#?} _jw_c=$_jw_c'\"'${_jw_p#?} ;;
      /*) _jw_s=$_jw_s/${_jw_p#?} _jw_c=$_jw_c/${_jw_p#?} ;;
      n*) _jw_s=$_jw_s$J_NL${_jw_p#?} _jw_c=$_jw_c'\n'${_jw_p#?}; JW_CTL=1 ;;
      t*) _jw_s=$_jw_s$J_TAB${_jw_p#?} _jw_c=$_jw_c'\t'${_jw_p#?}; JW_CTL=1 ;;
      r*) _jw_s=$_jw_s$J_CR${_jw_p#?} _jw_c=$_jw_c'\r'${_jw_p#?}; JW_CTL=1 ;;
      b*) _jw_s=$_jw_s$J_BS${_jw_p#?} _jw_c=$_jw_c'\b'${_jw_p#?}; JW_CTL=1 ;;
      f*) _jw_s=$_jw_s$J_FF${_jw_p#?} _jw_c=$_jw_c'\f'${_jw_p#?}; JW_CTL=1 ;;
      *) return 1 ;;
    esac
  done
  [ -z "$_jw_hi" ]
}

# jw_decode_out RAW: write the decoded bytes of RAW to stdout, NULs included.
jw_decode_out() {
  _jw_nulout=1
  _jw_decode "$1" || { _jw_nulout=; return 1; }
  _jw_nulout=
  printf '%s' "$_jw_s"
}

# jw_decode RAW: public form; sets JW_S.
jw_decode() {
  _jw_decode "$1" || return 1
  JW_S=$_jw_s
}

# --- the walker --------------------------------------------------------------------
_jw_fail() {
  [ -n "$JW_ERR" ] || JW_ERR=$1
  return 1
}

# _jw_value_done: a value finished at the current depth.
_jw_value_done() {
  case ${#_jw_stack} in
    0) _jw_st=D; return 0 ;;
    1) _jw_c1=$((_jw_c1 + 1)) ;;
    2) _jw_c2=$((_jw_c2 + 1)) ;;
    3) _jw_c3=$((_jw_c3 + 1)) ;;
  esac
  _jw_st=N
}

# _jw_emit KIND VALUE: report a value at the current depth to the callback.
_jw_emit() {
  case ${#_jw_stack} in
    1) "$_jw_cb" "$1" 1 "$_jw_k1" "" "$2" || _jw_fail "rejected member $_jw_k1" ;;
    2)
      case $_jw_stack in
        *a) _jw_k2=$_jw_c2 ;;
      esac
      "$_jw_cb" "$1" 2 "$_jw_k1" "$_jw_k2" "$2" || _jw_fail "rejected member $_jw_k1" ;;
    3)
      case $_jw_stack in
        *a) JW_K3=$_jw_c3 ;;
        *) JW_K3=$_jw_k3 ;;
      esac
      "$_jw_cb" "$1" 3 "$_jw_k1" "$_jw_k2" "$2" || _jw_fail "rejected member $_jw_k1" ;;
    *) return 0 ;;
  esac
}

_jw_open() { # o|a OFFSET
  case $_jw_st in
    S) [ "$1" = o ] || return 1 ;;
    V|VA) _jw_emit "$1" "" || return 1 ;;
    *) return 1 ;;
  esac
  if [ ${#_jw_stack} = 1 ]; then
    _jw_vs=$2
    [ -n "$JW_ECHO_K1" ] && [ "$_jw_k1" = "$JW_ECHO_K1" ] && _jw_echoing=1
  fi
  if [ ${#_jw_stack} -ge "$NEST_MAX" ]; then
    _jw_fail "nested deeper than $NEST_MAX (REC-1)"
    return 1
  fi
  _jw_stack=$_jw_stack$1
  case ${#_jw_stack} in
    1) _jw_c1=0 ;;
    2) _jw_c2=0 ;;
    3) _jw_c3=0 ;;
  esac
  if [ "$1" = o ]; then
    eval "_jw_keys_${#_jw_stack}=\$J_NL"
    _jw_st=KO
  else
    _jw_st=VA
  fi
}

_jw_close() { # o|a OFFSET
  case $_jw_st$1 in
    No|KOo) ;;
    Na|VAa) ;;
    *) return 1 ;;
  esac
  case $_jw_stack in
    *"$1") ;;
    *) return 1 ;;
  esac
  _jw_d=${#_jw_stack}
  case $_jw_d in
    1) _jw_n=$_jw_c1 ;;
    2) _jw_n=$_jw_c2 ;;
    3) _jw_n=$_jw_c3 ;;
    *) _jw_n=0 ;;
  esac
  _jw_stack=${_jw_stack%?}
  if [ "$1" = o ]; then _jw_kind=O; else _jw_kind=A; fi
  _jw_emit "$_jw_kind" "$_jw_n" || return 1
  if [ ${#_jw_stack} = 1 ]; then
    _jw_echoing=
    _jw_emit E "$_jw_vs $(($2 + 1 - _jw_vs))" || return 1
  fi
  _jw_value_done
}

# j_isnum TOKEN: a JSON number.
j_isnum() {
  _jn=${1#-}
  _jn_i=${_jn%%[!0-9]*}
  [ -n "$_jn_i" ] || return 1
  case $_jn_i in 0?*) return 1 ;; esac
  _jn=${_jn#"$_jn_i"}
  case $_jn in
    .*)
      _jn=${_jn#.}
      _jn_i=${_jn%%[!0-9]*}
      [ -n "$_jn_i" ] || return 1
      _jn=${_jn#"$_jn_i"} ;;
  esac
  case $_jn in
    [eE]*)
      _jn=${_jn#?}
      _jn=${_jn#[+-]}
      _jn_i=${_jn%%[!0-9]*}
      [ -n "$_jn_i" ] || return 1
      _jn=${_jn#"$_jn_i"} ;;
  esac
  [ -z "$_jn" ]
}

_jw_scalar() { # TOKEN OFFSET
  case $_jw_st in V|VA) ;; *) return 1 ;; esac
  case $1 in
    true) _jw_kind=t ;;
    false) _jw_kind=f ;;
    null) _jw_kind=z ;;
    *)
      if [ "$JW_INTONLY" = 1 ] && [ "$_jw_k1" != payload ] && [ "$_jw_k1" != result ]; then
        case $1 in
          0|[1-9]|-[1-9]|[1-9]*[0-9]|-[1-9]*[0-9]) ;;
          *) _jw_fail "a number that is not an integer in compact form (REC-1)"; return 1 ;;
        esac
        case ${1#-} in *[!0-9]*) _jw_fail "a number that is not an integer in compact form (REC-1)"; return 1 ;; esac
      else
        j_isnum "$1" || return 1
      fi
      _jw_kind=n ;;
  esac
  _jw_emit "$_jw_kind" "$1" || return 1
  _jw_echo_value "$1"
  if [ ${#_jw_stack} = 1 ]; then
    _jw_emit E "$2 ${#1}" || return 1
  fi
  _jw_value_done
}

_jw_string() { # RAW OFFSET-OF-OPENING-QUOTE
  JW_RAW=$1
  if [ "$JW_LENIENT" = 1 ]; then
    _jw_decode_lenient "$1" || return 1
    JW_CANON=$_jw_c
  else
    _jw_decode "$1" || return 1
    JW_CANON=$1
  fi
  case $_jw_st in
    KO|K)
      _jw_d=${#_jw_stack}
      eval "_jw_kl=\${_jw_keys_$_jw_d}"
      case $_jw_kl in
        *"$J_NL$JW_CANON$J_NL"*) _jw_fail "duplicate member name"; return 1 ;;
      esac
      eval "_jw_keys_$_jw_d=\$_jw_kl\$JW_CANON\$J_NL"
      _jw_echo "\"$JW_CANON\""
      case $_jw_d in
        1) _jw_k1=$_jw_s ;;
        2) _jw_k2=$_jw_s ;;
        3) _jw_k3=$_jw_s ;;
      esac
      _jw_st=C ;;
    V|VA)
      _jw_emit s "$_jw_s" || return 1
      _jw_echo_value "\"$JW_CANON\""
      if [ ${#_jw_stack} = 1 ]; then
        _jw_emit E "$2 $((${#1} + 2))" || return 1
      fi
      _jw_value_done ;;
    *) return 1 ;;
  esac
}

_jw_outside() { # FIELD OFFSET
  _jw_o=$1
  _jw_at=$2
  while [ -n "$_jw_o" ]; do
    case $_jw_o in
      '{'*) _jw_open o "$_jw_at" || return 1; _jw_echo '{' ;;
      '['*) _jw_open a "$_jw_at" || return 1; _jw_echo '[' ;;
      '}'*) _jw_echo '}'; _jw_close o "$_jw_at" || return 1 ;;
      ']'*) _jw_echo ']'; _jw_close a "$_jw_at" || return 1 ;;
      ':'*) [ "$_jw_st" = C ] || return 1; _jw_st=V; _jw_echo : ;;
      ','*)
        [ "$_jw_st" = N ] || return 1
        _jw_echo ,
        case $_jw_stack in *o) _jw_st=K ;; *) _jw_st=V ;; esac ;;
      [-0-9tfn]*)
        _jw_tok=${_jw_o%%$_jw_tokend}
        [ ${#_jw_tok} -le 64 ] || return 1
        _jw_scalar "$_jw_tok" "$_jw_at" || return 1
        _jw_o=${_jw_o#"$_jw_tok"}
        _jw_at=$((_jw_at + ${#_jw_tok}))
        continue ;;
      *)
        # RFC 8259 whitespace between tokens, in lenient mode only.
        case $JW_LENIENT$_jw_o in
          "1 "*|"1$J_TAB"*|"1$J_NL"*|"1$J_CR"*) ;;
          *) return 1 ;;
        esac ;;
    esac
    _jw_o=${_jw_o#?}
    _jw_at=$((_jw_at + 1))
  done
}

# _jw_echo_value TOKEN: a scalar or string value in compact form: echoed
# inside the value of JW_ECHO_K1, or is that whole value.
_jw_echo_value() {
  if [ "$_jw_echoing" = 1 ]; then
    JW_ECHO=$JW_ECHO$1
  elif [ ${#_jw_stack} = 1 ] && [ -n "$JW_ECHO_K1" ] && [ "$_jw_k1" = "$JW_ECHO_K1" ]; then
    JW_ECHO=$1
  fi
  return 0
}

# _jw_echo TEXT: while the value of record member JW_ECHO_K1 is being read,
# append TEXT (a token in compact form) to JW_ECHO.
_jw_echo() {
  [ "$_jw_echoing" = 1 ] && JW_ECHO=$JW_ECHO$1
  return 0
}

jw_walk() { # TEXT CALLBACK
  JW_ERR= JW_ECHO= _jw_echoing=
  _jw_cb=$2
  if [ "$JW_LENIENT" = 1 ]; then
    # RFC 8259: whitespace around the text and between tokens; every escape.
    set -- "${1#"${1%%[!"$J_WS"]*}"}" "$2"
    set -- "${1%"${1##*[!"$J_WS"]}"}" "$2"
    case $1 in
      *["$J_CTL3"]*) _jw_fail "raw control character"; return 1 ;;
    esac
    _jw_tokend=$J_STRUCTW
  else
    case $1 in
      *["$J_CTL"]*) _jw_fail "raw control character or whitespace"; return 1 ;;
    esac
    _jw_tokend=$J_STRUCT
  fi
  case $1 in
    '{'*'}') ;;
    *) _jw_fail "not a JSON object"; return 1 ;;
  esac
  case $1 in
    *[$J_HIGH]*) j_utf8_ok "$1" || { _jw_fail "invalid UTF-8"; return 1; } ;;
  esac
  _jw_stack= _jw_st=S _jw_k1= _jw_k2= _jw_k3= _jw_c1=0 _jw_c2=0 _jw_c3=0
  _jw_in=0 _jw_sbuf= _jw_pos=0 _jw_spos=0
  set -f
  _jw_ifs=$IFS
  IFS='"'
  # shellcheck disable=SC2086
  set -- $1
  IFS=$_jw_ifs
  set +f
  for _jw_f do
    if [ "$_jw_in" = 0 ]; then
      case $JW_LENIENT$_jw_f in
        1*) ;;
        *' '*) _jw_fail "whitespace outside strings"; return 1 ;;
      esac
      _jw_outside "$_jw_f" "$_jw_pos" || { _jw_fail "not in compact JSON form (near byte $_jw_at)"; return 1; }
      _jw_pos=$((_jw_pos + ${#_jw_f} + 1))
      _jw_in=1
      _jw_spos=$((_jw_pos - 1))
    else
      _jw_pos=$((_jw_pos + ${#_jw_f} + 1))
      if [ "$JW_LENIENT" = 1 ]; then
        case $_jw_f in
          *["$J_TAB$J_NL$J_CR"]*) _jw_fail "raw control character in a string"; return 1 ;;
        esac
      fi
      case $_jw_f in
        *\\)
          _jw_t=$_jw_f
          _jw_bs=0
          while :; do
            case $_jw_t in
              *\\) _jw_t=${_jw_t%?}; _jw_bs=$((_jw_bs + 1)) ;;
              *) break ;;
            esac
          done
          if [ $((_jw_bs % 2)) = 1 ]; then
            _jw_sbuf=$_jw_sbuf$_jw_f'"'
            continue
          fi ;;
      esac
      _jw_string "$_jw_sbuf$_jw_f" "$_jw_spos" || { _jw_fail "invalid string or misplaced string (near byte $_jw_spos)"; return 1; }
      _jw_sbuf=
      _jw_in=0
    fi
  done
  [ "$_jw_st" = D ] || { _jw_fail "incomplete JSON object"; return 1; }
}

# --- the writer ----------------------------------------------------------------------
# jstr VALUE: JS = VALUE as a JSON string literal in compact form.
jstr() {
  case $1 in
    *["\"\\$J_CTL"]*) ;;
    *) JS="\"$1\""; return 0 ;;
  esac
  _js_in=$1
  JS='"'
  while :; do
    _js_pre=${_js_in%%["\"\\$J_CTL"]*}
    JS=$JS$_js_pre
    _js_in=${_js_in#"$_js_pre"}
    [ -n "$_js_in" ] || break
    case $_js_in in
      '"'*) JS=$JS'\"' ;;
      '\'*) JS=$JS'\\' ;;
      "$J_NL"*) JS=$JS'\n' ;;
      "$J_TAB"*) JS=$JS'\t' ;;
      "$J_CR"*) JS=$JS'\r' ;;
      "$J_BS"*) JS=$JS'\b' ;;
      "$J_FF"*) JS=$JS'\f' ;;
      *)
        for _js_h in 01 02 03 04 05 06 07 0b 0e 0f 10 11 12 13 14 15 16 17 18 19 1a 1b 1c 1d 1e 1f; do
          eval "_js_c=\$J_C_$_js_h"
          case $_js_in in
            "$_js_c"*) JS=$JS'\u00'$_js_h; break ;;
          esac
        done ;;
    esac
    _js_in=${_js_in#?}
  done
  JS=$JS'"'
}

# j_int TEXT MIN MAX: TEXT is an integer in compact form within [MIN, MAX].
j_int() {
  case $1 in
    0|[1-9]|[1-9]*[0-9]|-[1-9]|-[1-9]*[0-9]) ;;
    *) return 1 ;;
  esac
  case ${1#-} in *[!0-9]*) return 1 ;; esac
  [ ${#1} -le 17 ] || return 1
  [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]
}
