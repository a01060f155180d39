# Sourced by the bench scripts that run UCX's own tool as their reference.
#
# ucx_perftest_final TEST SIZE ITERS WARMUP [extra client args...]
#   Runs one ucx_perftest server/client pair on this host and prints the client's "Final:" line.
#   A fixed sleep before the client is not enough on a loaded machine (the server may take
#   seconds to listen), and a random port may already be taken (the server then exits at once).
#   So: wait until the server's port is in LISTEN state in /proc/net/tcp, start over on a fresh
#   port when the server died, and try a few pairs before giving up with what went wrong.
#   The server is always killed by its pid, never by name.
ucx_perftest_server=""
ucx_perftest_cleanup() {
  if [ -n "$ucx_perftest_server" ]; then
    kill "$ucx_perftest_server" 2>/dev/null || true
    wait "$ucx_perftest_server" 2>/dev/null || true
    ucx_perftest_server=""
  fi
}

ucx_perftest_listening() {  # port -> 0 when some socket listens on it (IPv4 or IPv6)
  local hex
  hex=$(printf '%04X' "$1")
  awk -v p=":$hex" '$2 ~ p"$" && $4 == "0A" {found = 1} END {exit !found}' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

ucx_perftest_final() {
  local test=$1 size=$2 iters=$3 warmup=$4
  shift 4
  local attempt port waited out="" why=""
  for attempt in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 20000))
    ucx_perftest_listening "$port" && { why="port $port busy"; continue; }
    timeout 300 ucx_perftest -p "$port" >/dev/null 2>&1 &
    ucx_perftest_server=$!
    waited=0
    while ! ucx_perftest_listening "$port"; do
      if ! kill -0 "$ucx_perftest_server" 2>/dev/null; then
        why="the server on port $port exited before listening"
        break
      fi
      ((waited < 300)) || { why="the server did not listen on port $port within 30 s"; break; }
      sleep 0.1
      waited=$((waited + 1))
    done
    if ucx_perftest_listening "$port" && kill -0 "$ucx_perftest_server" 2>/dev/null; then
      out=$(timeout 120 ucx_perftest localhost -p "$port" -t "$test" -s "$size" -n "$iters" -w "$warmup" "$@" \
        2>/dev/null | grep '^Final:' || true)
      [ -n "$out" ] || why="the client on port $port printed no Final: line"
    fi
    ucx_perftest_cleanup
    if [ -n "$out" ]; then
      echo "$out"
      return 0
    fi
  done
  echo "ucx_perftest $test -s $size gave no result after 5 server/client pairs (last: $why)" >&2
  return 1
}
