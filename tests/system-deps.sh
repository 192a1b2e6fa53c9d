#!/usr/bin/env bash
# What the test suite needs from outside the Python lock, brought by `make test` itself (the
# README's test command): Debian's chromium and its fallback fonts (tests/browser drive
# /usr/bin/chromium through Playwright), Debian's prometheus (tests/deploy run promtool and a
# live Prometheus scrape), and a project-local kubectl (tests/sim/kubectl and the e2e session
# tests: Debian's kubernetes-client unpacked into tools/ with `apt-get download` + `dpkg -x`,
# never installed, never the machine's /usr/bin/kubectl), and Debian's valgrind (bench
# controllers counts a traced sync's instructions under callgrind; tests/bench run it).
#
# Nothing missing: silent, exit 0. Something missing and we are root with apt-get: one line
# saying what is installed and why, then apt-get (its output only on failure). Something missing
# and no way to install it: one message naming the packages and the command, exit 2, before any
# test runs.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
kubectl="$root/tools/kubectl/usr/bin/kubectl"

packages=()
reasons=()
if [ ! -x /usr/bin/chromium ]; then
    packages+=(chromium)
    reasons+=("chromium for the browser tests")
fi
# The screenshot's fallback fonts: Debian's chromium does not pull them in by itself.
if ! dpkg -s fonts-dejavu-core >/dev/null 2>&1; then
    packages+=(fonts-dejavu-core)
fi
if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; then
    packages+=(prometheus)
    reasons+=("prometheus and promtool for tests/deploy")
fi
if ! command -v valgrind >/dev/null 2>&1 || ! command -v callgrind_control >/dev/null 2>&1; then
    packages+=(valgrind)
    reasons+=("valgrind for bench controllers' instruction counts")
fi
need_kubectl=0
if [ ! -x "$kubectl" ]; then
    need_kubectl=1
    reasons+=("Debian's kubectl unpacked into tools/ for the kubectl tests")
fi

[ ${#packages[@]} -eq 0 ] && [ $need_kubectl -eq 0 ] && exit 0

join() { local out="" s; for s in "$@"; do out+="${out:+, }$s"; done; echo "$out"; }

can_install=1
command -v apt-get >/dev/null 2>&1 || can_install=0
if [ ${#packages[@]} -gt 0 ] && [ "$(id -u)" -ne 0 ]; then
    can_install=0
fi
if [ $can_install -eq 0 ]; then
    {
        echo "make test: the tests need what this machine lacks and cannot install here" \
            "(apt-get as root): $(join "${reasons[@]}")."
        if [ ${#packages[@]} -gt 0 ]; then
            echo "  install them with:  sudo apt-get update && sudo apt-get install -y" \
                "--no-install-recommends ${packages[*]}"
        fi
        if [ $need_kubectl -eq 1 ]; then
            echo "  then fetch kubectl: (mkdir -p tools/kubectl && cd tools/kubectl &&" \
                "apt-get download kubernetes-client && dpkg -x kubernetes-client_*.deb .)"
        fi
        echo "  and run make test again."
    } >&2
    exit 2
fi

what=()
[ ${#packages[@]} -gt 0 ] && what+=("${packages[*]} with apt-get")
[ $need_kubectl -eq 1 ] && what+=("kubectl into tools/")
echo "make test: installing $(join "${what[@]}") ($(join "${reasons[@]}")); once only"

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
fail() {
    echo "make test: $1 failed:" >&2
    tail -n 20 "$log" >&2
    exit 2
}
export DEBIAN_FRONTEND=noninteractive
updated=0
if [ ${#packages[@]} -gt 0 ]; then
    apt-get update -qq >"$log" 2>&1 || fail "apt-get update"
    updated=1
    apt-get install -y -qq --no-install-recommends "${packages[@]}" >"$log" 2>&1 \
        || fail "apt-get install ${packages[*]}"
fi
if [ $need_kubectl -eq 1 ]; then
    dest="$root/tools/kubectl"
    mkdir -p "$dest" >"$log" 2>&1 || fail "mkdir -p $dest"
    if ! (cd "$dest" && apt-get download kubernetes-client) >"$log" 2>&1; then
        if [ $updated -eq 0 ]; then
            apt-get update -qq >"$log" 2>&1 || fail "apt-get update"
        fi
        (cd "$dest" && apt-get download kubernetes-client) >"$log" 2>&1 \
            || fail "apt-get download kubernetes-client"
    fi
    deb="$(ls -t "$dest"/kubernetes-client_*.deb | head -1)"
    dpkg -x "$deb" "$dest" >"$log" 2>&1 || fail "dpkg -x $(basename "$deb")"
    [ -x "$kubectl" ] || { echo "make test: $(basename "$deb") holds no usr/bin/kubectl" >&2; exit 2; }
fi
