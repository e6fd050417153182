#!/usr/bin/env bash
# tensorboard.sh MPIRUN TRAINER SOURCE_DIR: the TensorBoard event files of the MNIST MLP example,
# decoded without TensorFlow (python3-protobuf, classes protoc makes from
# tools/tensorboard/event.proto) record by record:
# - every record's two masked CRC32Cs; the first event is file_version "brain.Event:2";
# - one scalar per metrics.csv column and row (tag train/..., eval/..., system/...), at the
#   row's step, equal to the CSV's value (float32, the CSV's 6 digits); the configuration and
#   the model as text summaries;
# - a run that logged steps past its newest checkpoint (its last checkpoint failed) and is
#   resumed writes a second file that starts with a SessionLog START at the first new step;
#   without the purge the re-trained steps appear twice; with TensorBoard's purge rule applied,
#   every series has one point per step and equals the resumed run's metrics.csv;
# - [log] tensorboard = false writes no event file.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_start "$@"  # $mpirun $trainer $src, the working directory $src, $tmp (removed at exit)
py=/usr/bin/python3
command -v protoc >/dev/null || { echo "SKIP: protoc (protobuf-compiler) missing: run tools/setup.sh"; exit 77; }
protoc --proto_path=tools/tensorboard --python_out="$tmp" tools/tensorboard/event.proto || exit 1
export PYTHONPATH="$tmp:$src/tools/tensorboard"
run() {  # out_dir extra-args...
  local out=$1
  shift
  "$mpirun" -q -np 2 --oversubscribe --bind-to none "$trainer" inputs/mnist_mlp.ini --set "run.out_dir=$out" \
    --set train.steps=40 --set log.log_every=10 --set train.eval_every=20 --set checkpoint.every_steps=10 \
    --set checkpoint.every_epochs=0 "$@" 2>&1
}
run "$tmp/a" --set checkpoint.resume=none >/dev/null
check "the run exits 0" test $? -eq 0
check "one event file under out_dir/tensorboard" test "$(ls "$tmp/a/tensorboard" | grep -c '^events.out.tfevents\.')" -eq 1

cat >"$tmp/compare.py" <<'PY'
import csv, pathlib, sys
import event_pb2, read_events
out, purge = pathlib.Path(sys.argv[1]), sys.argv[2] == "purge"
files = sorted((out / "tensorboard").glob("events.out.tfevents.*"))
evs = list(read_events.events(files, event_pb2))  # checks both CRCs of every record
first = evs[0][1]
assert first.WhichOneof("what") == "file_version" and first.file_version == "brain.Event:2", first
texts = {v.tag: v.tensor.string_val[0].decode() for _, e in evs if e.WhichOneof("what") == "summary"
         for v in e.summary.value if v.HasField("tensor")}
assert "config/ini" in texts and "global_batch = 256" in texts["config/ini"], texts.keys()
assert "config/model" in texts and "dense" in texts["config/model"]
points = read_events.scalars(files, event_pb2, purge)
seen = {}
for tag, step, value in points:
    assert (tag, step) not in seen, f"{tag} has two points at step {step}"
    seen[(tag, step)] = value
tags = {"epoch": "train/epoch", "wall_s": "system/wall_s", "loss": "train/loss", "accuracy": "train/accuracy",
        "samples_per_s": "system/samples_per_s", "data_wait_pct": "system/data_wait_pct",
        "comm_exposed_pct": "system/comm_exposed_pct", "lr": "train/lr", "eval_loss": "eval/loss",
        "eval_accuracy": "eval/accuracy", "grad_norm": "train/grad_norm", "loss_scale": "train/loss_scale",
        "skipped_steps": "train/skipped_steps", "cpu_busy_pct": "system/cpu_busy_pct", "rss_mib": "system/rss_mib",
        "cpu_energy_j": "system/cpu_energy_j", "tokens_per_s": "system/tokens_per_s",
        "perplexity": "train/perplexity", "eval_perplexity": "eval/perplexity",
        "gpu_mem_total_mib": "system/gpu_mem_total_mib", "model_flops_per_s": "system/model_flops_per_s",
        "mfu_pct": "system/mfu_pct", "eval_mae": "eval/mae", "eval_bits_per_byte": "eval/bits_per_byte"}
tags.update({f"gpu_{x}_{s}": f"system/gpu_{x}_{s}" for x in ("util_pct", "mem_used_mib", "power_w", "temp_c", "energy_j")
             for s in ("min", "mean", "max")})
rows = list(csv.DictReader(open(out / "metrics.csv")))
assert set(rows[0].keys()) == set(tags) | {"step"}, sorted(rows[0].keys())
n = 0
for r in rows:
    for col, tag in tags.items():
        if r[col] == "":
            assert (tag, int(r["step"])) not in seen, (tag, r["step"])
            continue
        v = seen.pop((tag, int(r["step"])))
        want = float(r[col])
        assert abs(v - want) <= 2e-5 * max(1.0, abs(want)), (tag, r["step"], v, want)
        n += 1
assert not seen, f"points without a CSV row: {sorted(seen)[:5]}"
print(f"{len(files)} file(s), {len(evs)} records, {n} scalars match metrics.csv")
PY
check "records, first event, tags and values match metrics.csv" $py "$tmp/compare.py" "$tmp/a" nopurge

# Resume: the first run logs steps 10-40, but its checkpoint at 40 fails (test hook), so the
# newest checkpoint is step 20; the resumed run trains 21-40 again and logs 30 and 40 again.
HPCTRAIN_TEST_FAIL_CHECKPOINT=40 run "$tmp/b" --set checkpoint.resume=none --set checkpoint.every_steps=20 >/dev/null
check "the first run fails at its last checkpoint" test $? -ne 0
sleep 1  # the second file's name has a later time stamp
run "$tmp/b" --set checkpoint.every_steps=20 >/dev/null
check "the resumed run exits 0" test $? -eq 0
check "two event files" test "$(ls "$tmp/b/tensorboard" | grep -c '^events.out.tfevents\.')" -eq 2
cat >"$tmp/starts.py" <<'PY'
import pathlib, sys
import event_pb2, read_events
f = sorted((pathlib.Path(sys.argv[1]) / "tensorboard").glob("events.out.tfevents.*"))[int(sys.argv[2])]
starts = [e.step for _, e in read_events.events([f], event_pb2)
          if e.WhichOneof("what") == "session_log" and e.session_log.status == event_pb2.SessionLog.START]
assert starts == [int(sys.argv[3])], starts
PY
check "the second file has a SessionLog START at step 21" $py "$tmp/starts.py" "$tmp/b" 1 21
check "without the purge, steps 30 and 40 appear twice (what a reader ignoring it shows)" \
  bash -c "! $py '$tmp/compare.py' '$tmp/b' nopurge >/dev/null 2>&1"
check "purged, the series equal the resumed run's metrics.csv, one point per step" $py "$tmp/compare.py" "$tmp/b" purge

# A fresh start in the used folder: its file starts with a START at step 0, so the purged
# series are the new run's alone.
sleep 1
run "$tmp/b" --set checkpoint.resume=none --set train.steps=30 >/dev/null
check "a fresh start in the same folder exits 0" test $? -eq 0
check "... its file (the third) has a SessionLog START at step 0" $py "$tmp/starts.py" "$tmp/b" 2 0
check "... purged, the series equal the fresh run's metrics.csv (steps 10-30) alone" \
  $py "$tmp/compare.py" "$tmp/b" purge
# The reader as a user runs it: no PYTHONPATH, no options but --purge; it makes its classes once.
cli=$(cd / && env -u PYTHONPATH HOME="$tmp/home" XDG_CACHE_HOME= $py "$src/tools/tensorboard/read_events.py" --purge \
  "$tmp/b/tensorboard")
check "read_events.py without --proto-out: exit 0, train/loss at steps 10, 20, 30 only" \
  test $? -eq 0 -a "$(awk '$1 == "train/loss" {printf "%s ", $2}' <<<"$cli")" = "10 20 30 "
check "... its classes made once into ~/.cache/hpctrain" \
  test -f "$(ls -d "$tmp"/home/.cache/hpctrain/tensorboard-proto-*)/event_pb2.py"

run "$tmp/c" --set checkpoint.resume=none --set log.tensorboard=false >/dev/null
check "tensorboard = false: no event file" test ! -e "$tmp/c/tensorboard"
finish
