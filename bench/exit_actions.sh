# shellcheck shell=bash
# Sourced by bench scripts: actions to run when the script exits, however it exits.
# on_exit CMD: CMD (a string, evaluated) runs at exit, before those added earlier (last in, first
# out, as a script sets things up); each runs even when another fails. ^C, TERM and HUP exit the
# script so that the actions run (a benchmark that changed a machine setting puts it back).

bench_exit_actions=()
bench_run_exit_actions() {
  local status=$? i
  set +e
  for ((i = ${#bench_exit_actions[@]} - 1; i >= 0; i--)); do
    BENCH_EXIT_STATUS=$status eval "${bench_exit_actions[i]}"
  done
  return "$status"
}
on_exit() {
  bench_exit_actions+=("$1")
  trap bench_run_exit_actions EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap 'exit 129' HUP
}

# bench_work_dir: sets work to $OUT (created if missing) or to a temporary directory that is
# removed on success and kept, with its samples, when the script fails.
bench_work_dir() {
  if [ -n "${OUT:-}" ]; then
    work=$OUT
    mkdir -p "$work"
  else
    work=$(mktemp -d)
    # shellcheck disable=SC2016 # expanded when the action runs, with the exit status
    on_exit 'if ((BENCH_EXIT_STATUS)); then echo "failed (exit $BENCH_EXIT_STATUS); samples kept in $work" >&2; else rm -rf "$work"; fi'
  fi
}
