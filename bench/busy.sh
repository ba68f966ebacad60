#!/usr/bin/env bash
# Runs a command while LOOPS (default 2) busy loops take the machine's cores, as other work
# would: `bench/busy.sh CMD ARGS...`. The loops end with the command, however it ends.
set -u
loops=()
for _ in $(seq "${LOOPS:-2}"); do
  sh -c 'while :; do :; done' &
  loops+=($!)
done
trap 'kill "${loops[@]}" 2>/dev/null' EXIT
"$@"
