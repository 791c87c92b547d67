#!/bin/bash
# bench/gpu/run.sh: issue 5's GPU check on a lent NVIDIA card (an H200),
# in under 8 minutes, results under $OUT.  Builds gmux from this tree,
# starts a private daemon (MPS per card, libgmux.so for every job) and:
#   1. memory: under a 4 GiB cap, 6 GiB by every route (plain PyTorch,
#      expandable_segments, the cudaMallocAsync backend, a CUDA graph,
#      CuPy) must be refused and 2 GiB allowed;
#   2. compute: four --share 0.25 jobs of a bf16 8192^2 matmul for 20 s at
#      once, then one job alone: each TFLOP/s, the spread (max-min)/mean
#      (target <= 0.3 %) and the sum over the lone job (target >= 95 %);
#   3. live resize: a quarter-share job resized to a half, TFLOP/s before
#      and after.
# Usage: OUT=/some/dir bench/gpu/run.sh
set -u
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
PY=${PYTHON:-python3}
G=$ROOT/build/gmux
SUMMARY=$OUT/summary.txt
: > "$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }
T0=$(date +%s)
elapsed() { echo $(( $(date +%s) - T0 )); }

# -- build (the daemon needs the Debian -dev packages; the shim only libc)
say "== build"
if ! make -j"$(nproc)" all > "$OUT/build.log" 2>&1; then
	say "build failed (see build.log); libgmux.so alone:"
	make -j"$(nproc)" build/libgmux.so >> "$OUT/build.log" 2>&1 &&
	    say "libgmux.so built; without the daemon there is nothing to run"
	exit 1
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader \
    | tee "$OUT/gpu.txt" | sed 's/^/gpu: /' | tee -a "$SUMMARY"
$PY -c 'import torch; print("torch", torch.__version__, torch.version.cuda)' \
    2>&1 | tee -a "$SUMMARY"
$PY -c 'import cupy; print("cupy", cupy.__version__)' 2>&1 | tail -1 |
    tee -a "$SUMMARY"

# -- a private daemon; short GMUX_HOME so MPS's socket path fits
export GMUX_HOME
GMUX_HOME=$(mktemp -d /tmp/gmuxb.XXXXXX)
"$G" serve -v > "$OUT/serve.log" 2>&1 &
SERVE=$!
cleanup() {
	"$G" stop $("$G" ps --json 2>/dev/null | $PY -c \
	    'import json,sys; print(" ".join(j["id"] for j in json.load(sys.stdin)))' \
	    2>/dev/null) > /dev/null 2>&1
	kill "$SERVE" 2>/dev/null
	wait "$SERVE" 2>/dev/null
	cp -r "$GMUX_HOME/mps" "$OUT/mps" 2>/dev/null
	rm -rf "$GMUX_HOME"
}
trap cleanup EXIT
for _ in $(seq 50); do "$G" cards --json > "$OUT/cards.json" 2>/dev/null && break; sleep 0.2; done
say "cards: $($PY -c 'import json; c=json.load(open("'"$OUT"'/cards.json")); print([(x["model"], x["enforce"]) for x in c])')"

# Waits for job $1 to end and leaves its output in $2.
wait_job() {
	timeout "${3:-120}" "$G" logs -f "$1" > "$2" 2>&1
}

# -- 1. memory routes under a 4 GiB cap
say "== memory: 4 GiB cap, 6 GiB over, 2 GiB under"
mem_pass=0 mem_total=0
for route in plain expandable async graph cupy; do
	case $route in
	expandable) conf=expandable_segments:True ;;
	async) conf=backend:cudaMallocAsync ;;
	*) conf= ;;
	esac
	line=$(timeout 120 "$G" run --share 0.1 --mem 4G -- env \
	    ${conf:+PYTORCH_CUDA_ALLOC_CONF=$conf} \
	    $PY "$ROOT/bench/gpu/mem_route.py" $route 6 2 2>&1 | grep '^{' | tail -1)
	say "  $route: ${line:-no result}"
	mem_total=$((mem_total + 1))
	case $line in *'"pass": true'*) mem_pass=$((mem_pass + 1)) ;; esac
done
say "memory: $mem_pass of $mem_total routes as expected  (t=$(elapsed)s)"

# -- 2. four quarter shares at once, then one job alone
say "== compute: 4 x --share 0.25, bf16 8192^2, 20 s"
at=$(( $(date +%s) + 30 ))
jobs=()
for i in 1 2 3 4; do
	jobs+=("$("$G" run -d --share 0.25 --mem 16G -- \
	    $PY "$ROOT/bench/gpu/matmul.py" 20 --at $at)")
done
rates=()
for j in "${jobs[@]}"; do
	wait_job "$j" "$OUT/quarter-$j.log" 120
	rates+=("$(sed -n 's/^tflops //p' "$OUT/quarter-$j.log" | tail -1)")
done
say "  quarter jobs TFLOP/s: ${rates[*]}"
lone_j=$("$G" run -d --share 1 --mem 32G -- $PY "$ROOT/bench/gpu/matmul.py" 20)
wait_job "$lone_j" "$OUT/lone.log" 120
lone=$(sed -n 's/^tflops //p' "$OUT/lone.log" | tail -1)
say "  lone job TFLOP/s: $lone"
$PY - "$lone" "${rates[@]}" <<'EOF' | tee -a "$SUMMARY"
import sys
lone = float(sys.argv[1] or 0)
r = [float(x) for x in sys.argv[2:] if x]
if len(r) == 4 and lone > 0:
    mean = sum(r) / 4
    spread = (max(r) - min(r)) / mean * 100
    share = sum(r) / lone * 100
    print(f"compute: spread {spread:.2f} % (target <= 0.3 %), sum {share:.1f} % "
          f"of the lone job (target >= 95 %)")
else:
    print(f"compute: incomplete results {r} lone {lone}")
EOF
say "  (t=$(elapsed)s)"

# -- 3. live resize of a quarter share to a half
say "== live resize: --share 0.25 -> 0.5 after 12 s"
rj=$("$G" run -d --share 0.25 --mem 16G -- $PY "$ROOT/bench/gpu/matmul.py" 30 --every 1)
for _ in $(seq 120); do grep -q '^t ' "$GMUX_HOME/jobs/$rj/log" 2>/dev/null && break; sleep 0.5; done
sleep 12
"$G" resize "$rj" --share 0.5 > "$OUT/resize.out" 2>&1
rc=$?
say "  resize: $(head -c 200 "$OUT/resize.out") (exit $rc)"
wait_job "$rj" "$OUT/resize.log" 90
$PY - "$OUT/resize.log" <<'EOF' | tee -a "$SUMMARY"
import re, sys
pts = [(float(t), float(r)) for t, r in
       re.findall(r"^t ([\d.]+) tflops ([\d.]+)", open(sys.argv[1]).read(), re.M)]
if not pts:
    print("resize: no rate lines")
    sys.exit()
cut = max(t for t, _ in pts if t <= 13) if any(t <= 13 for t, _ in pts) else 0
before = [r for t, r in pts if 2 <= t <= cut]
after = [r for t, r in pts if t >= cut + 3]
avg = lambda v: sum(v) / len(v) if v else 0
print(f"resize: before {avg(before):.1f} TFLOP/s, after {avg(after):.1f} TFLOP/s "
      f"(ratio {avg(after) / avg(before) if avg(before) else 0:.2f})")
EOF
say "done in $(elapsed)s"
