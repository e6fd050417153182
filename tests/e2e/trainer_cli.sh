#!/usr/bin/env bash
# trainer_cli.sh MPIRUN TRAINER SOURCE_DIR: the trainer's command line as
# users meet it: --help, --version (--help and the like without MPI), --dry-run grids at 1-4 ranks for every
# model-parallel layout, ${VAR} expansion, and bad input -> one line on
# stderr, exit code 2, no MPI_Abort banner.
set -u
mpirun=$1
trainer=$2
src=$3
cd "$src" || exit 1  # the example decks use paths relative to the project root
ini=inputs/mnist_mlp.ini
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

help=$("$trainer" --help)
check "--help exits 0" test $? -eq 0
for s in run data model train optim parallel checkpoint; do
  check "--help lists [$s]" grep -qF "[$s]" <<<"$help"
done
check "--help shows a key with type and default" grep -qF "global_batch = integer >= 1  (default: 64)" <<<"$help"
check "--help lists exit codes" grep -qF "3  collective timeout" <<<"$help"
check "--help lists exit code 4" grep -qE "^ +4  a checkpoint could not be written" <<<"$help"
check "--help shows the layer grammar" grep -qF "conv(out, k, pad=0, stride=1)" <<<"$help"
check "--help shows repeat and names" grep -qF "repeat(N, layers...)" <<<"$help"

version=$("$trainer" --version)
check "--version exits 0" test $? -eq 0
check "--version names the version" grep -qE "^hpctrain [0-9]+\.[0-9]+\.[0-9]+" <<<"$version"
check "--version lists backends" grep -qF "backends: cpu" <<<"$version"
check "--version names the MPI library" grep -qE "^MPI: Open MPI v[0-9]" <<<"$version"
check "--version reports the headers' CUDA awareness" grep -qE "CUDA-aware MPI headers: (yes|no)" <<<"$version"

# --help, --version, --config-reference and --describe-layers start no MPI: they work where MPI
# cannot start (OMPI_MCA_pml=no_such: MPI_Init fails, as a --dry-run, which starts MPI, shows), and
# under a launcher only its rank 0 prints.
nompi() { OMPI_MCA_pml=no_such "$trainer" "$@"; }
check "--help where MPI cannot start: exit 0, the same text" test "$(nompi --help 2>&1)" = "$help"
check "--version where MPI cannot start: exit 0, the same text" test "$(nompi --version 2>&1)" = "$version"
nompi "$ini" --dry-run >/dev/null 2>&1
check "... where a --dry-run, which starts MPI, fails (exit $?)" test $? -ne 0
check "--config-reference where MPI cannot start" test "$(nompi --config-reference 2>&1 | grep -c '^| `global_batch`')" = 1
out=$(nompi --describe-layers "dense(3)" --input-shape 4 2>&1)
check "--describe-layers where MPI cannot start" grep -qF '"name": "dense.0.weight"' <<<"$out"
check "--help under mpirun -np 2: one copy" \
  test "$("$mpirun" -q -np 2 --oversubscribe --bind-to none "$trainer" --help | grep -c "^usage:")" = 1

# [kernels] threads beyond the CPUs a rank may run on (its affinity mask, as mpirun's default
# binding to one core sets it; here taskset): one warning line naming the launch that fits.
if command -v taskset >/dev/null; then
  out=$(taskset -c 0 "$trainer" "$ini" --dry-run --set kernels.threads=2 2>&1)
  check "threads = 2 on 1 CPU: one warning line naming --bind-to none" \
    test "$(grep -c "warning: \[kernels\] threads = 2, but this rank may run on 1 CPU .*--bind-to none" <<<"$out")" = 1
  out=$(taskset -c 0 "$trainer" "$ini" --dry-run --set kernels.threads=1 2>&1)
  check "... threads = 1 on 1 CPU: no warning" test "$(grep -c "warning.*kernels.*threads" <<<"$out")" = 0
fi

# The mesh table: rank r must sit at dp = r / P, pp = r % P (P pipeline stages).
grid_ok() {  # np M output
  local np=$1 m=$2 out=$3
  local rows
  rows=$(awk '/^rank +host +local rank +device +dp +pp/{on=1; getline; next} on && !/^ *[0-9]+ /{on=0} on' <<<"$out")
  [ "$(wc -l <<<"$rows")" -eq "$np" ] || return 1
  awk -v m="$m" '{ r=$1; if ($(NF-1) != int(r/m) || $NF != r%m) bad=1 } END { exit bad }' <<<"$rows"
}
for np in 1 2 3 4; do
  for m in 1 2 3 4; do
    [ $((np % m)) -eq 0 ] || continue
    out=$("$mpirun" -q -np $np --oversubscribe --bind-to none "$trainer" "$ini" --dry-run \
          --set parallel.pipeline_parallel=$m --set train.global_batch=$((12 * np)) 2>&1)
    rc=$?
    check "dry run np=$np P=$m exits 0" test $rc -eq 0
    check "dry run np=$np P=$m prints the mesh" grid_ok $np $m "$out"
    [ "$np" -eq 4 ] && [ "$m" -eq 2 ] && echo "$out" | sed -n '/^Process mesh/,$p'
    if [ "$m" -eq 2 ]; then
      check "dry run np=$np P=2 prints the layer groups" grep -qE "^ +0  flatten\.0 \.\. relu\.0 +803840 " <<<"$out"
    fi
    if [ "$np" -eq 4 ] && [ "$m" -eq 2 ]; then
      check "... and names the groups by dimension (dp[pp=1]: ranks 1 3; pp[dp=0]: ranks 0 1)" \
        test -n "$(grep -E '^dp\[pp=1\] +1 3 ' <<<"$out")" -a -n "$(grep -E '^pp\[dp=0\] +0 1 ' <<<"$out")"
    fi
  done
done

# The old key names ([parallel] model_parallel, schedule) still work, with one warning each.
out=$("$mpirun" -q -np 2 --oversubscribe --bind-to none "$trainer" "$ini" --dry-run --set parallel.model_parallel=2 \
  --set parallel.schedule=gpipe 2>&1)
check "old names: exit 0, two stages" test $? -eq 0 -a -n "$(grep -E '^Pipeline: 2 stages.*schedule gpipe' <<<"$out")"
check "... one warning naming the new key each" test "$(grep -c '^warning: --set: \[parallel\] \(model_parallel\|schedule\) is now called \[parallel\] pipeline_\(parallel\|schedule\)' <<<"$out")" -eq 2

out=$(HPCT_E2E_ROOT=/scratch/e2e "$trainer" "$ini" --dry-run --set 'data.path=${HPCT_E2E_ROOT}/mnist' 2>&1)
check "\${VAR} expands in paths" grep -qF "/scratch/e2e/mnist" <<<"$out"
out=$("$trainer" "$ini" --dry-run --set model.layers= 2>&1)
check "--dry-run without [model] layers (a check of the data and the mesh): exit 0 and a warning that training would refuse it" \
  test $? -eq 0 -a -n "$(grep -x "warning: \[model\] layers is not set: training would refuse this deck" <<<"$out")"

bad_input() {  # description, expected text, np, trainer arguments...
  local what=$1 expect=$2 np=$3
  shift 3
  local err rc
  err=$("$mpirun" -q -np "$np" --oversubscribe --bind-to none "$trainer" "$@" 2>&1 >/dev/null)
  rc=$?
  err=$(without_runtime_noise <<<"$err")
  check "$what: exit code 2 (got $rc)" test $rc -eq 2
  check "$what: one line on stderr" test "$(grep -c . <<<"$err")" -eq 1
  check "$what: names the problem" grep -qF -- "$expect" <<<"$err"
  check "$what: no MPI_Abort banner" bash -c "! grep -q MPI_ABORT <<<\"\$0\"" "$err"
  echo "     $err"
}
bad_input "unknown key" "unknown key 'glob_batch' in [train]" 2 "$ini" --set train.glob_batch=3
bad_input "cuda graphs on the CPU" "cuda_graphs = true needs device = cuda" 2 "$ini" --set kernels.cuda_graphs=true \
  --set run.device=cpu
bad_input "bad value" "[optim] lr = 'fast': expected number > 0" 3 "$ini" --set optim.lr=fast
bad_input "--describe-layers without a shape" "--describe-layers needs --input-shape" 1 --describe-layers "dense(3)"
bad_input "--describe-layers, a bad shape" "--input-shape '4,0': expected sizes >= 1" 1 --describe-layers "dense(3)" \
  --input-shape 4,0
bad_input "--describe-layers, a bad string" "[model] layers = 'dense(3': unclosed '('" 1 --describe-layers "dense(3" \
  --input-shape 4
out=$("$trainer" --describe-layers "flatten fc:dense(3) relu dense(2)" --input-shape 2,2 2>&1)
check "--describe-layers names the layers' tensors as the model does (fc.weight [3, 4], dense.0.bias [2])" \
  python3 -c 'import json, sys; d = json.loads(sys.argv[1][sys.argv[1].index("{"):])
t = {x["name"]: x["shape"] for x in d["tensors"]}
sys.exit(0 if t == {"fc.weight": [3, 4], "fc.bias": [3], "dense.0.weight": [2, 3], "dense.0.bias": [2]} else 1)' "$out"
bad_input "impossible mesh" "pipeline_parallel = 2 does not divide the world size 3" 3 "$ini" --set parallel.pipeline_parallel=2
bad_input "batch vs grid" "global_batch = 255 is not divisible by the data-parallel size 4" 4 "$ini" --set train.global_batch=255
bad_input "missing file" "configuration file '/no/such.ini' cannot be read" 2 /no/such.ini
bad_input "unknown option" "unrecognised option '--frobnicate'" 2 "$ini" --frobnicate
bad_input "a key given as an option" "unrecognised option '--steps': configuration keys go through --set, as in --set train.steps=VALUE" 2 "$ini" --steps 3
bad_input "more stages than layers" "pipeline_parallel = 4 stages but [model] layers has only 2 layer(s)" 4 "$ini" \
  --set parallel.pipeline_parallel=4 --set 'model.layers=flatten dense(10)'
bad_input "empty layer group" "group 1 ('4-3') is empty" 2 "$ini" --set parallel.pipeline_parallel=2 --set 'model.groups=0-3 4-3'
bad_input "layers in no group" "leaves out layers 4-5" 2 "$ini" --set parallel.pipeline_parallel=2 --set 'model.groups=0-1 2-3'
bad_input "micro-batches vs per-rank batch" "micro_batches = 4 does not divide the per-rank batch 6" 4 "$ini" \
  --set parallel.pipeline_parallel=2 --set train.micro_batches=4 --set train.global_batch=12
o=$(mktemp -d)
bad_input "a metrics file that takes no header" "[log] metrics_file: cannot write /dev/full (disk full?)" 2 "$ini" \
  --set log.metrics_file=/dev/full --set run.out_dir="$o" --set train.steps=1
rm -rf "$o"
tmp=$(mktemp)
printf '[train]\nepochs = 2\n[optim]\nlr 0.1\n' >"$tmp"
bad_input "syntax error" "$tmp:4: cannot parse line 'lr 0.1'" 2 "$tmp"
rm -f "$tmp"
# data.path at what is not a dataset: the command or the folder that fixes it.
idx=$(mktemp -d)
: >"$idx/train-images-idx3-ubyte"
bad_input "IDX files as data.path" "it holds IDX files: make a dataset of them with hpctrain-data import-idx --images" 2 \
  "$ini" --set "data.path=$idx"
rm -rf "$idx"
bad_input "a split as data.path" "(it is a split: give the folder above it, inputs/data/mnist-small)" 2 "$ini" \
  --set data.path=inputs/data/mnist-small/train
bad_input "a layer type in another case" "(did you mean dense? layer types are lower case)" 2 "$ini" \
  --set 'model.layers=flatten Dense(10)'

finish
