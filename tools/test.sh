#!/usr/bin/env bash
# Builds fa-jit and runs every test suite. GPU suites skip, saying why, where no
# device exists. Usage:
#   tools/test.sh [--exhaustive] [--families LIST] [build directory, default build]
# --exhaustive sweeps every head dim of each family instead of a covering sample
# (FAJIT_TEST_EXHAUSTIVE=1, read by the sweeps themselves; longer than CI allows).
# --families a,b limits the compile sweeps over several families (compile_decode,
# compile_features) to those (FAJIT_TEST_FAMILIES), e.g. the ones a change touched.
set -euo pipefail
cd "$(dirname "$0")/.."
while [[ $# -gt 0 ]]; do
  case "$1" in
    --exhaustive) export FAJIT_TEST_EXHAUSTIVE=1; shift ;;
    --families) export FAJIT_TEST_FAMILIES="${2:?--families needs a comma-separated list}"; shift 2 ;;
    *) break ;;
  esac
done
build="${1:-build}"
exec tools/build-env.sh bash -c "
  set -euo pipefail
  # CI builds the fleet cache and runs its suites against a real redis-server.
  cmake -S . -B '$build' -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFAJIT_FLEET_CACHE=ON > /dev/null
  cmake --build '$build' -j\$(nproc)
  cd '$build'
  status=0
  # Verbose output goes to a log; the terminal gets ctest's result lines, then each
  # suite's doctest summary and skip notices, then the full output of failures.
  ctest -V -j\$(nproc) > ctest-full.log 2>&1 || status=\$?
  grep -E '^ *[0-9]+/[0-9]+ Test +#|tests passed|tests failed' ctest-full.log || true
  echo '---- doctest summaries ----'
  awk '/^ *Start +[0-9]+: /{name[\$2+0]=\$3}
       match(\$0, /^[0-9]+: (\[doctest\] (test cases|assertions)|skipped)/){n=substr(\$0,1,index(\$0,\":\")-1); printf \"%-26s %s\n\", name[n+0], substr(\$0,index(\$0,\":\")+2)}' ctest-full.log
  if [ \$status -ne 0 ]; then
    echo '---- output of failed suites ----'
    for number in \$(grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*(Failed|Timeout|Exception)' ctest-full.log | sed -E 's/.*#([0-9]+):.*/\1/'); do
      grep -E \"^\$number: \" ctest-full.log | tail -n 60
    done
  fi
  exit \$status
"
