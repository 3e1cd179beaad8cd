#!/usr/bin/env bash
# Installs every build and test dependency from Debian packages, idempotently:
# apt-get update and install run only when a package is missing.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git
  clang libclang-rt-14-dev          # libFuzzer and sanitizer runtimes (make fuzz)
  libuv1-dev                        # the event loop
  libcurl4-openssl-dev              # HTTP client (curl multi on libuv): headers
  libcurl3-gnutls                   # the libcurl the daemon loads (adapters/http/curl_shim.h)
  libcjson-dev                      # JSON
  libmicrohttpd-dev                 # dashboard and test fakes
  libavahi-client-dev avahi-daemon avahi-utils  # mDNS publish/browse
  libssl-dev                        # libcrypto: SHA-256, random
  libutf8proc-dev                   # graphemes, NFKC
  libstemmer-dev                    # Snowball English stemmer
  libcmocka-dev                     # unit tests
  libhiredis-dev redis-server       # Redis coordination (REDIS_URL) and its tests
  procps bc curl                    # benches (RSS, arithmetic) and the demo (healthz)
  chromium                          # the dashboard's pages tested in headless Chromium
  systemd                           # systemd-analyze, systemd-sysusers: tests/integration/install
                                    # verifies the units (installs without a running systemd)
  python3                           # node-gyp: builds the PDS's native module (scripts/pds)
)

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

# npm (Debian's, unless a Node with npm is already there): it fetches the
# Node 22 and the AT Protocol PDS that the Bluesky tests run against.
if ! command -v npm >/dev/null 2>&1; then
  install_packages npm
fi

# The real AT Protocol PDS for the Bluesky tests (ctest -L pds): Node 22,
# @atproto/pds and @did-plc/server from npm into a cache OUTSIDE the clone
# (~/.cache/general-agent/pds, GA_PDS_CACHE moves it): about 2.5 min and
# 560 MB the first time, nothing afterwards. GA_SKIP_PDS=1 skips it; without
# it those tests are skipped (exit 77), saying why.
if [ "${GA_SKIP_PDS:-0}" != 1 ]; then
  "$(dirname "$0")/pds/install.sh" ||
    echo "bootstrap: the real PDS could not be installed; ctest -L pds will be skipped" >&2
fi
