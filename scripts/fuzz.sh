#!/usr/bin/env bash
# Runs ember's libFuzzer harnesses (test/fuzz) from a built fuzz folder (`make fuzz` builds
# build-fuzz and calls this script).
#
# usage: scripts/fuzz.sh [options] [FUZZER...]      (default: every harness in BUILD/fuzz/bin)
#   --build DIR     the build folder (default build-fuzz): DIR/fuzz/{bin,seed} and test/fuzz/ir.dict
#   --seconds N     time per fuzzer (default 300)
#   --parallel      run the fuzzers at the same time instead of one after the other
#   --fork K        libFuzzer fork mode with K processes per fuzzer, going on after a finding
#                   (-ignore_crashes/-ignore_timeouts/-ignore_ooms) so one run collects all of them
#   --max-len N     the longest input to generate (default 4096)
#   --deep DEPTH    first run the deeply nested inputs of test/fuzz/make_deep_inputs.py (DEPTH levels)
#                   through each fuzzer once
#   --out DIR       where corpora, artefacts and logs go (default BUILD/fuzz)
#   --nice          run at the lowest CPU priority (nice -n 19)
# Writes DIR/corpus/<fuzzer>/ (what the fuzzer learnt; kept between runs), DIR/artifacts/<fuzzer>/
# (crash-*, timeout-*, oom-*, leak-*: each one input that shows a finding; slow-unit-* are inputs
# that took over 10 s, kept for a look but not findings) and DIR/logs/<fuzzer>.log, and
# prints a summary line per fuzzer. The exit status is 1 when this run wrote any artefact.
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=build-fuzz seconds=300 parallel=0 fork=0 max_len=4096 deep=0 out="" nice=()
fuzzers=()
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --parallel) parallel=1; shift ;;
    --fork) fork=$2; shift 2 ;;
    --max-len) max_len=$2; shift 2 ;;
    --deep) deep=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --nice) nice=(nice -n 19); shift ;;
    -h|--help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) fuzzers+=("$1"); shift ;;
  esac
done
build=$(cd "$build" 2>/dev/null && pwd) || { echo "fuzz.sh: no build folder $build (run make fuzz)" >&2; exit 2; }
bin=$build/fuzz/bin seed=$build/fuzz/seed dict=$src/test/fuzz/ir.dict
out=${out:-$build/fuzz}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if ((${#fuzzers[@]} == 0)); then
  for f in "$bin"/*_fuzzer; do [[ -x $f ]] && fuzzers+=("$(basename "$f")"); done
fi
((${#fuzzers[@]})) || { echo "fuzz.sh: no fuzzers in $bin" >&2; exit 2; }
[[ -d $seed ]] || { echo "fuzz.sh: no seed corpus in $seed" >&2; exit 2; }

# Deep inputs are generated once, outside the corpus: their size would raise -max_len for all.
deep_dir=$out/deep
if ((deep > 0)); then
  python3 "$src/test/fuzz/make_deep_inputs.py" "$deep_dir" "$deep" || exit 2
fi

# A stack trace names functions and lines; a finding stops the process (libFuzzer saves the input).
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

run_one() {
  local name=$1 log=$out/logs/$1.log
  local corpus=$out/corpus/$name artifacts=$out/artifacts/$name
  mkdir -p "$corpus" "$artifacts" "$out/logs"
  : > "$log"
  if ((deep > 0)); then
    # One process per input: a crash ends the process, and the next input still runs.
    local input
    for input in "$deep_dir"/*; do
      "${nice[@]}" "$bin/$name" -timeout=600 -rss_limit_mb=8192 -artifact_prefix="$artifacts/" \
        "$input" >> "$log" 2>&1
      echo "== deep input $(basename "$input"): exit $?" >> "$log"
    done
  fi
  local args=(-max_total_time="$seconds" -timeout=60 -rss_limit_mb=4096 -max_len="$max_len"
              -dict="$dict" -artifact_prefix="$artifacts/" -print_final_stats=1)
  if ((fork > 0)); then
    args+=(-fork="$fork" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  fi
  "${nice[@]}" "$bin/$name" "${args[@]}" "$corpus" "$seed" >> "$log" 2>&1
  local rc=$?
  local found
  found=$(find "$artifacts" -type f -newer "$stamp" ! -name 'slow-unit-*' | wc -l)
  local stats
  # The last status line: `#N DONE cov: ...` (one process) or `#N: cov: ... crash: ...` (fork mode).
  stats=$(grep -E '^#[0-9]+(:| +(DONE|pulse|NEW|REDUCE))' "$log" | tail -1)
  local deep_failed=""
  if ((deep > 0)); then
    deep_failed=$(grep -E '^== deep input .*: exit [1-9]' "$log" | sed 's/^== deep input //' | tr '\n' ' ')
    deep_failed="; deep inputs failing: ${deep_failed:-none}"
  fi
  echo "$name: exit $rc, $found artefact(s) in $artifacts$deep_failed; last: ${stats:-none}; $(grep -m1 -E 'stat::number_of_executed_units' "$log" | tr -s ' ')"
}

summary=$out/summary.txt
: > "$summary"
stamp=$out/.run-start
touch "$stamp"
if ((parallel)); then
  for f in "${fuzzers[@]}"; do run_one "$f" >> "$summary" & done
  wait
else
  for f in "${fuzzers[@]}"; do run_one "$f" >> "$summary"; done
fi
cat "$summary"
found=$(find "$out/artifacts" -type f -newer "$stamp" ! -name 'slow-unit-*' 2>/dev/null | wc -l)
if ((found)); then
  echo "fuzz.sh: $found finding(s): see $out/artifacts and $out/logs" >&2
  exit 1
fi
