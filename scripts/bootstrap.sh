#!/usr/bin/env bash
# Installs the Debian packages general-agent needs, idempotently (apt-get
# update and install run only when a package is missing).
#
#   scripts/bootstrap.sh          what building and running need: the
#                                 compiler, the libraries, avahi (mDNS),
#                                 bubblewrap (the coder's sandbox), curl
#                                 (the demo). make build, make demo and
#                                 make install run this.
#   scripts/bootstrap.sh --test   that, and what only the tests use: clang
#                                 (fuzzing, sanitizer runtimes), redis-server,
#                                 PostgreSQL (the AppView of the Bluesky
#                                 network tests), Chromium (the pages'
#                                 browser tests), systemd (the units'
#                                 checks), bc, and Node 22 with the AT
#                                 Protocol PDS and network (about 1 GB,
#                                 outside the clone). make test runs this.
set -euo pipefail

want_test=0
case "${1:-}" in
  --test) want_test=1 ;;
  "") ;;
  *) echo "usage: scripts/bootstrap.sh [--test]" >&2; exit 64 ;;
esac

PACKAGES=(
  build-essential cmake pkg-config git
  libuv1-dev                        # the event loop
  libcurl4-openssl-dev              # HTTP client (curl multi on libuv): headers
  libcurl3-gnutls                   # the libcurl the daemon loads (adapters/http/curl_shim.h)
  libgnutls28-dev                   # GnuTLS headers: the native HTTP transport (GA_HTTP_BACKEND)
  libidn2-dev                       # libidn2 headers: international host names (native transport)
  libnghttp2-dev                    # nghttp2 headers: HTTP/2 in the native transport (loaded by
                                    # dlopen, adapters/http/nghttp2_shim.h)
  libcjson-dev                      # JSON
  libmicrohttpd-dev                 # the dashboard (and the tests' stand-ins)
  libavahi-client-dev avahi-daemon avahi-utils  # mDNS publish/browse
  libssl-dev                        # libcrypto: random
  libutf8proc-dev                   # graphemes, NFKC
  libstemmer-dev                    # Snowball English stemmer
  libcmocka-dev                     # the unit tests, configured with the rest
  libhiredis-dev                    # Redis coordination (REDIS_URL)
  bubblewrap                        # bwrap: the sandbox the external coder and a task's tests
                                    # run in (modules/coder); without it no coder runs
  curl                              # the demo (the room's /healthz)
)
TEST_PACKAGES=(
  clang libclang-rt-14-dev          # libFuzzer and sanitizer runtimes (make fuzz)
  clang-format                      # make format; the format test
  redis-server                      # the Redis coordination tests
  postgresql                        # the AT Protocol AppView of the Bluesky network tests
                                    # (they run a private cluster of their own on loopback)
  procps bc                         # benches (RSS, arithmetic)
  openssl                           # the native HTTP transport's TLS tests: a CA made at test time
  nghttp2-server                    # nghttpd: the HTTP/2 server of the native transport's tests
  chromium                          # the dashboard's pages tested in headless Chromium
  systemd                           # systemd-analyze, systemd-sysusers: tests/integration/install
                                    # verifies the units (installs without a running systemd)
  python3                           # node-gyp: builds the PDS's native module (scripts/pds)
)
[ $want_test = 1 ] && PACKAGES+=("${TEST_PACKAGES[@]}")

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

install_packages() {
  local pkgs=("$@")
  [ ${#pkgs[@]} -eq 0 ] && return 0
  echo "bootstrap: installing ${pkgs[*]}"
  local SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
      echo "bootstrap: missing packages (${pkgs[*]}) and not root; install them or run as root" >&2
      exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${pkgs[@]}"
}

install_packages "${missing[@]}"

[ $want_test = 1 ] || exit 0

# npm (Debian's, unless a Node with npm is already there): it fetches the
# Node 22 and the AT Protocol servers that the Bluesky tests run against.
if ! command -v npm >/dev/null 2>&1; then
  install_packages npm
fi

# The real AT Protocol servers for the Bluesky tests (ctest -L pds): Node 22,
# @atproto/pds and @did-plc/server (the PDS alone) and @atproto/dev-env (a
# whole network: PLC, PDS, AppView; the tests start PostgreSQL and Redis for
# it) from npm into a cache OUTSIDE the clone (~/.cache/general-agent/pds,
# GA_PDS_CACHE moves it): 3 to 10 min and about 1 GB the first time, nothing
# afterwards. GA_SKIP_PDS=1 skips it; without it those tests are skipped
# (exit 77), saying why.
if [ "${GA_SKIP_PDS:-0}" != 1 ]; then
  "$(dirname "$0")/pds/install.sh" ||
    echo "bootstrap: the real AT Protocol servers could not be installed; ctest -L pds will be skipped" >&2
fi
