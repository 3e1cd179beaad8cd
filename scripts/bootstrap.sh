#!/usr/bin/env bash
# Installs every build and test dependency from Debian packages, idempotently:
# apt-get update and install run only when a package is missing.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git
  clang libclang-rt-14-dev          # libFuzzer and sanitizer runtimes (make fuzz)
  libuv1-dev                        # the event loop
  libcurl4-openssl-dev              # HTTP client (curl multi on libuv)
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
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "bootstrap: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "bootstrap: missing packages (${missing[*]}) and not root; install them or run as root" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
