# Sourced by bench/run_gloo_bench.sh and bench/run_gloo_interleaved.sh: the run's TCP socket
# buffers.
#
# TCP_BUFFERS=auto (default) leaves the kernel's settings alone. TCP_BUFFERS=fixed (root) makes
# every TCP socket opened during the run start with large buffers (the defaults of
# net.ipv4.tcp_rmem and tcp_wmem raised to 8 and 4 MiB; the maxima stay) and puts the old values
# back on exit. Gloo sets no buffer sizes, so its loopback connections start at the kernel's
# defaults (128 KiB to receive, 16 KiB to send on Debian 12) and grow by autotuning, differently
# for each connection: on the 2-vCPU VM, gloo contexts connected alike within one process ran a
# 2-rank 1 MiB allreduce at about 0.47 ms or 0.84 ms for their whole life, and with the buffers
# fixed all at 0.39-0.40 ms in four launches (docs/performance.md, "The plugin against gloo in the
# same processes"). Both sides of a comparison run under the same setting either way. Two runs
# with TCP_BUFFERS=fixed at once would each restore what the other set: run one at a time.

# shellcheck source=bench/exit_actions.sh
source "$(dirname "${BASH_SOURCE[0]}")/exit_actions.sh"

fix_tcp_buffers() {
  case "${TCP_BUFFERS:-auto}" in
    auto) return 0 ;;
    fixed) ;;
    *) echo "$(basename "$0"): TCP_BUFFERS=${TCP_BUFFERS}: expected auto or fixed" >&2; exit 2 ;;
  esac
  if [ "$(id -u)" != 0 ]; then
    echo "$(basename "$0"): TCP_BUFFERS=fixed writes net.ipv4.tcp_rmem and tcp_wmem: run as root, or leave it unset" >&2
    exit 2
  fi
  local rmem wmem r w
  rmem=$(sysctl -n net.ipv4.tcp_rmem)
  wmem=$(sysctl -n net.ipv4.tcp_wmem)
  read -r -a r <<<"$rmem"
  read -r -a w <<<"$wmem"
  on_exit "sysctl -q -w net.ipv4.tcp_rmem='$rmem' net.ipv4.tcp_wmem='$wmem'"
  # The maxima are left as they are, or raised to the new default where below it.
  sysctl -q -w net.ipv4.tcp_rmem="${r[0]} 8388608 $((r[2] > 8388608 ? r[2] : 8388608))" \
    net.ipv4.tcp_wmem="${w[0]} 4194304 $((w[2] > 4194304 ? w[2] : 4194304))"
  echo "TCP buffers fixed for this run: tcp_rmem $(sysctl -n net.ipv4.tcp_rmem | tr '\t' ' '), tcp_wmem $(sysctl -n net.ipv4.tcp_wmem | tr '\t' ' ') (restored on exit)" >&2
}
