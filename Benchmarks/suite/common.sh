# Shared by the benchmark scripts (scripts/bench and scripts/bench-*): paths, options, samples,
# servers and their cleanup. Sourced, never run.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# The release build the suite measures (scripts/bench builds it): never the default .build.
scratch=${ELFHOOK_BENCH_SCRATCH:-$root/.build-bench}
release=$scratch/release
preload=$release/libElfHookPreload.so
monitor=$release/libElfHookMonitor.so
elfhook=$release/elfhook

quick=0
for argument in "$@"; do
  case $argument in
    --quick) quick=1 ;;
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "$(basename "$0"): unknown option $argument (use --quick or nothing)" >&2; exit 2 ;;
  esac
done

note() { echo "$(basename "$0"): $*" >&2; }
fail() {
  echo "$(basename "$0"): FAILED: $*" >&2
  exit 1
}
need() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 || fail "$tool is not installed (scripts/install-dependencies installs the suite's tools)"
  done
}
need_build() {
  [[ -x $elfhook && -f $preload && -f $monitor ]] || fail "no release build in $scratch: run swift build -c release --scratch-path .build-bench (scripts/bench does)"
}

# installed_elfhook: sets loop_elfhook to the `elfhook` users install, and loop_elfhook_name to
# what it is, for the loops of short-lived processes, where `elfhook run`'s own start and exit are
# part of what is measured: the release bundle's (ELFHOOK_BUNDLE, a tarball: scripts/test and
# scripts/bench make one; its Swift linked statically, 2.6 M instructions for `elfhook run -- true`),
# unpacked into $work; else this build's (8.8 M more: the loader binding it to the toolchain's
# shared Swift libraries), said so.
installed_elfhook() {
  loop_elfhook=$elfhook loop_elfhook_name="this build's \`elfhook\` (no ELFHOOK_BUNDLE: linked against the toolchain's shared Swift libraries, not as installed)"
  [[ -n ${ELFHOOK_BUNDLE:-} ]] || return 0
  [[ -f $ELFHOOK_BUNDLE ]] || fail "ELFHOOK_BUNDLE=$ELFHOOK_BUNDLE: no such file (scripts/package makes it)"
  mkdir -p "$work/bundle"
  tar -xzf "$ELFHOOK_BUNDLE" -C "$work/bundle" || fail "ELFHOOK_BUNDLE=$ELFHOOK_BUNDLE: cannot unpack it"
  loop_elfhook=$(echo "$work"/bundle/*/bin/elfhook)
  [[ -x $loop_elfhook ]] || fail "ELFHOOK_BUNDLE=$ELFHOOK_BUNDLE: no bin/elfhook in it"
  loop_elfhook_name="the release bundle's \`elfhook\` ($(basename "$ELFHOOK_BUNDLE"), as installed)"
}

# A private directory for this script's files, the record rings included (under /dev/shm, like
# `elfhook run` uses), removed at exit with every process the script started.
work=$(mktemp -d "${TMPDIR:-/tmp}/elfhook-bench.XXXXXX")
rings=$(mktemp -d /dev/shm/elfhook-bench.XXXXXX 2>/dev/null || mktemp -d "${TMPDIR:-/tmp}/elfhook-bench-rings.XXXXXX")
samples=$work/samples
: >"$samples"
started_pids=()
pid_files=()
cleanup() {
  local pid file deadline=$((SECONDS + 5))
  # nginx with master_process off ignores SIGTERM: SIGKILL the servers this script started first,
  # so that what runs them (elfhook run: it removes its ring directory; strace; ltrace) ends by
  # itself, then SIGKILL whatever is left.
  for file in "${pid_files[@]}"; do
    [[ -s $file ]] && kill -KILL "$(cat "$file")" 2>/dev/null || true
  done
  for pid in "${started_pids[@]}"; do
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$work" "$rings"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# spawn STDERR COMMAND…: runs COMMAND in the background (stdin and stdout /dev/null, stderr to
# STDERR) and sets spawned_pid to its pid. It runs under a subshell that reaps it, so that a
# command killed by a signal is not announced on this script's stderr.
spawn() {
  local stderr=$1
  shift
  rm -f "$work/spawned.pid"
  ("$@" </dev/null >/dev/null 2>"$stderr" &
    echo $! >"$work/spawned.pid"
    wait $!) 2>/dev/null &
  started_pids+=($!)
  until [[ -s $work/spawned.pid ]]; do sleep 0.01; done
  spawned_pid=$(cat "$work/spawned.pid")
  started_pids+=("$spawned_pid")
}

# use_baseline VARIABLE: sets `baseline` to the elfhook named by the environment variable VARIABLE
# (another build's, its libraries beside it), or to nothing when it is unset; fails when it names
# something that is not an executable. spawn_compared then runs that side under it.
use_baseline() {
  baseline=${!1:-}
  [[ -z $baseline || -x $baseline ]] || fail "$1: '$baseline' is not an elfhook executable"
}

# spawn_compared STDERR COMMAND…: spawns the side this build is compared with: COMMAND under the
# baseline's `elfhook run` when there is one (use_baseline), else COMMAND plain.
spawn_compared() {
  local stderr=$1
  shift
  if [[ -n ${baseline:-} ]]; then spawn "$stderr" "$baseline" run -- "$@"; else spawn "$stderr" "$@"; fi
}

# wait_gone PID SECONDS: until PID has exited; SIGKILL it after SECONDS.
wait_gone() {
  local deadline=$((SECONDS + $2))
  while kill -0 "$1" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.05; done
  kill -KILL "$1" 2>/dev/null || true
  while kill -0 "$1" 2>/dev/null; do sleep 0.05; done
}

# summary_value KEY FILE: a count from the summary `elfhook run` wrote to FILE (http, opened,
# accepted, dns, dropped, records); empty when there is none.
summary_value() {
  python3 "$root/Benchmarks/suite/summary.py" "$2" 2>/dev/null | tr ' ' '\n' | awk -F= -v k="$1" '$1 == k { print $2 }' || true
}

# result KEY VALUE: a headline figure for scripts/bench's goals table (ELFHOOK_BENCH_RESULTS).
result() {
  [[ -n ${ELFHOOK_BENCH_RESULTS:-} ]] && echo "$1 $2" >>"$ELFHOOK_BENCH_RESULTS"
  return 0
}

# valgrind_libraries: copies of the injected library and of the monitor it loads (from the same
# directory) without debug information, which valgrind cannot read in a static-stdlib library;
# sets valgrind_preload to the copy to LD_PRELOAD.
valgrind_libraries() {
  mkdir -p "$work/valgrind"
  objcopy --strip-debug "$preload" "$work/valgrind/libElfHookPreload.so"
  objcopy --strip-debug "$monitor" "$work/valgrind/libElfHookMonitor.so"
  valgrind_preload=$work/valgrind/libElfHookPreload.so
}

# sample KEY VALUE: one measurement; stats … turns the samples of a key into a table cell.
sample() { echo "$1 $2" >>"$samples"; }
stats() { python3 "$root/Benchmarks/suite/stats.py" "$samples" "$@"; }

# varied_site DIR: the varied workload's files (scripts/bench-traffic, bench-profile): 200 of
# 0.5–8 KiB in DIR/v (sizes spread evenly, fixed), each modified a second apart, as on a site whose
# files changed over time: every response's Last-Modified differs from the last one's. (Written in
# one go, their times were one second or two, and whether consecutive responses' Last-Modified
# lines matched was chance: ±135 instructions a request.) And a certificate for 127.0.0.1 in
# $work/cert.pem and $work/key.pem.
varied_site() {
  mkdir -p "$1/v"
  local i
  for i in $(seq 0 199); do
    head -c $((512 + (i * 7680 / 199))) /dev/urandom >"$1/v/$(printf %03d "$i").bin"
    touch -d "@$((1700000000 + i))" "$1/v/$(printf %03d "$i").bin"
  done
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
    -keyout "$work/key.pem" -out "$work/cert.pem" >/dev/null 2>&1 || fail "openssl could not make a certificate"
}

# A TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_http URL SECONDS: until the URL answers 200, or fail after SECONDS. Returns 1 on timeout.
wait_http() {
  local deadline=$((SECONDS + $2))
  while ((SECONDS < deadline)); do
    [[ $(curl -s -m 2 -o /dev/null -w '%{http_code}' "$1" 2>/dev/null) == 200 ]] && return 0
    sleep 0.1
  done
  return 1
}

# cpu_seconds PID: user + system CPU time the process itself has used so far.
cpu_seconds() {
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) / hz }' "/proc/$1/stat" 2>/dev/null || echo 0
}

# rss_kb PID [FIELD]: VmRSS (or RssAnon, RssFile…) of a live process, in KiB.
rss_kb() { awk -v f="${2:-VmRSS}:" '$1 == f { print $2 }' "/proc/$1/status"; }

# now: seconds since the epoch, with nanoseconds.
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", b - a }'; }

# The machine, for the tables' captions.
machine() {
  local cpu
  cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
  echo "$(nproc) cores ($cpu), kernel $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC')"
}
