#!/usr/bin/env bash
# Installs the Debian-packaged filesystem queues that `npm run bench` compares
# fsjob with: python3-dirq (Directory::Queue), nq, task-spooler and
# filespooler. Needs root (apt-get); without root it only says what is
# missing. The bench itself never installs anything: it skips each missing
# peer with a line saying so. `npm test` never runs this.
set -euo pipefail
pkgs=(python3-dirq nq task-spooler filespooler)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "peers: all installed (${pkgs[*]})"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "peers: missing ${missing[*]}; run this script as root to install them" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
for p in "${missing[@]}"; do
  if apt-cache show "$p" >/dev/null 2>&1; then
    apt-get install -y -qq --no-install-recommends "$p" >/dev/null && echo "peers: installed $p"
  else
    echo "peers: $p is not packaged here; the bench will skip it"
  fi
done
