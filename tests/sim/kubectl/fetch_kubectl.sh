#!/usr/bin/env bash
# Fetch a project-local kubectl from Debian's kubernetes-client package into tools/kubectl/
# (git-ignored): `apt-get download` + `dpkg -x`, never an install, never /usr/bin/kubectl.
# Idempotent: does nothing when tools/kubectl/usr/bin/kubectl exists. Runs `apt-get update`
# once if the package cannot be found (a fresh machine has no package lists).
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
dest="$root/tools/kubectl"
kubectl="$dest/usr/bin/kubectl"
[ -x "$kubectl" ] && exit 0
mkdir -p "$dest"
cd "$dest"
if ! apt-get download kubernetes-client >/dev/null 2>&1; then
    apt-get update -qq >/dev/null 2>&1 || true
    if ! apt-get download kubernetes-client >/dev/null; then
        echo "fetch_kubectl: cannot download Debian's kubernetes-client package" >&2
        exit 1
    fi
fi
deb="$(ls -t kubernetes-client_*.deb | head -1)"
dpkg -x "$deb" "$dest"
[ -x "$kubectl" ] || { echo "fetch_kubectl: $deb holds no usr/bin/kubectl" >&2; exit 1; }
echo "fetch_kubectl: $kubectl"
