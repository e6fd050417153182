#!/usr/bin/env bash
# jobscripts.sh SOURCE_DIR: the PBS, LSF and cloud job scripts with stub commands (those
# schedulers cannot be installed here): a fake $PBS_NODEFILE / $LSB_DJOB_HOSTFILE and job
# environment, a stub `mpirun` that records its command line and exits with a chosen code, and
# stubs for `qrerun`, `brequeue` and `nvidia-smi`. Checks the command line each script builds
# (rank count from the host file, the host file, the trainer, the INI, the run directory,
# resume = auto), that exit code 10 reruns or requeues the job and other codes do not, and that
# missing input gives exit 2 with a message. The cloud script also runs the real trainer twice
# (2 CPU ranks): the second run resumes from the first's checkpoint.
set -u
src=$1
cd "$src" || exit 1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# (mpirun's grace after a SIGTERM, which it also waits out after every exit 10: not what this tests)
export HPCTRAIN_STOP_GRACE_S=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin"
cat >"$tmp/bin/mpirun" <<'EOF'
#!/bin/bash
echo "mpirun $*" >>"$STUB_LOG"
if [ -n "${STUB_REPORT:-}" ]; then  # a watchdog's report on a host, then a launcher that never ends
  out=$(sed -n 's/.*--set run.out_dir=\([^ ]*\).*/\1/p' <<<"$*")
  trap '' USR1  # (mpirun passes it on to the ranks and keeps waiting for the lost host's)
  mkdir -p "$out/reports" && echo "rank 1 on node2: collective timeout: ..." >>"$out/reports/node2.txt"
  exec sleep 60
fi
sleep "${STUB_SLEEP:-0}"
codes=(${STUB_RC:-0})  # one exit code per call, the last one repeated
n=$(grep -c '^mpirun' "$STUB_LOG")
i=$((n - 1)); [ $i -ge ${#codes[@]} ] && i=$((${#codes[@]} - 1))
exit "${codes[$i]}"
EOF
for c in qrerun brequeue scontrol; do printf '#!/bin/bash\necho "%s $*" >>"$STUB_LOG"\n' "$c" >"$tmp/bin/$c"; done
printf '#!/bin/bash\nfor i in $(seq 0 $((${STUB_GPUS:-0} - 1))); do echo "GPU $i: NVIDIA H200 (UUID: GPU-$i)"; done\n' >"$tmp/bin/nvidia-smi"
chmod +x "$tmp/bin"/*
export PATH=$tmp/bin:$PATH STUB_LOG=$tmp/log
printf 'node1\nnode1\nnode2\nnode2\n' >"$tmp/hosts"

# ---- PBS ----
: >"$STUB_LOG"
out=$(PBS_NODEFILE=$tmp/hosts PBS_O_WORKDIR=$src PBS_JOBID=123.pbs HPCTRAIN_INI=inputs/mnist_mlp.ini \
  HPCTRAIN_ARGS="--set train.epochs=2" STUB_RC=0 jobscripts/pbs/train.pbs 2>&1)
check "PBS: exit 0" test $? -eq 0
check "PBS: mpirun with 4 ranks from the node file" \
  grep -qF "mpirun -np 4 --hostfile $tmp/hosts --bind-to none build/trainer inputs/mnist_mlp.ini --set train.epochs=2 --set run.out_dir=runs/hpctrain-123.pbs --set checkpoint.resume=auto" "$STUB_LOG"
check "PBS: no rerun after success" bash -c "! grep -q qrerun $STUB_LOG"
: >"$STUB_LOG"
PBS_NODEFILE=$tmp/hosts PBS_O_WORKDIR=$src PBS_JOBID=124.pbs HPCTRAIN_INI=inputs/mnist_mlp.ini STUB_RC=10 \
  jobscripts/pbs/train.pbs >/dev/null 2>&1
check "PBS: exit code 10 -> qrerun of the job" grep -qx "qrerun 124.pbs" "$STUB_LOG"
: >"$STUB_LOG"
PBS_NODEFILE=$tmp/hosts PBS_JOBID=125.pbs HPCTRAIN_INI=inputs/mnist_mlp.ini STUB_RC=2 jobscripts/pbs/train.pbs >/dev/null 2>&1
check "PBS: exit code 2 is passed on and not rerun" test $? -eq 2 -a -z "$(grep qrerun "$STUB_LOG")"
: >"$STUB_LOG"
out=$(PBS_NODEFILE=$tmp/hosts PBS_JOBID=126.pbs HPCTRAIN_INI=inputs/mnist_mlp.ini STUB_RC=4 jobscripts/pbs/train.pbs 2>&1)
check "PBS: exit code 4 (checkpoint not written) is passed on, explained, not rerun" \
  test $? -eq 4 -a -z "$(grep qrerun "$STUB_LOG")" -a -n "$(grep 'exit code 4: a checkpoint could not be written' <<<"$out")"
# A launcher still running 1 s (HPCTRAIN_ABORT_GRACE_S) after a watchdog's report: ended, exit 3.
t0=$SECONDS
out=$(PBS_NODEFILE=$tmp/hosts HPCTRAIN_INI=inputs/mnist_mlp.ini HPCTRAIN_OUT_DIR=$tmp/pbs-report STUB_REPORT=1 \
  HPCTRAIN_ABORT_GRACE_S=1 jobscripts/pbs/train.pbs 2>&1)
check "PBS: a launcher left running after a watchdog report is ended: exit 3 ($?), in $((SECONDS - t0)) s, said so" \
  test $? -eq 3 -a $((SECONDS - t0)) -le 10 -a -n "$(grep 'a watchdog reported .* ending it' <<<"$out")" \
  -a -n "$(grep 'exit code 3: a collective timed out' <<<"$out")"
# PBS's SIGTERM reaches the script too: it keeps waiting for the ranks, then reruns on exit 10.
: >"$STUB_LOG"
PBS_NODEFILE=$tmp/hosts PBS_JOBID=127.pbs HPCTRAIN_INI=inputs/mnist_mlp.ini STUB_RC=10 STUB_SLEEP=2 \
  jobscripts/pbs/train.pbs >"$tmp/pbs-term.log" 2>&1 &
sleep 1
kill -TERM $!
wait $!
check "PBS: SIGTERM to the script: it waits for the launcher's exit 10 ($?), then qrerun" \
  grep -qx "qrerun 127.pbs" "$STUB_LOG"
out=$(PBS_NODEFILE=$tmp/hosts jobscripts/pbs/train.pbs 2>&1)
check "PBS: no HPCTRAIN_INI -> exit 2 with a message" test $? -eq 2 -a -n "$(grep 'HPCTRAIN_INI is not set' <<<"$out")"

# ---- Slurm (the script's exit-code handling; a real Slurm run: slurm.sh) ----
: >"$STUB_LOG"
out=$(SLURM_JOB_ID=55 HPCTRAIN_LAUNCHER=mpirun STUB_RC=4 jobscripts/slurm/train.sbatch inputs/mnist_mlp.ini 2>&1)
check "Slurm: exit code 4 is passed on, explained, not requeued" \
  test $? -eq 4 -a -z "$(grep 'scontrol' "$STUB_LOG")" -a -n "$(grep 'exit code 4: a checkpoint could not be written' <<<"$out")"
: >"$STUB_LOG"
out=$(SLURM_JOB_ID=57 HPCTRAIN_LAUNCHER=mpirun STUB_RC=5 jobscripts/slurm/train.sbatch inputs/mnist_mlp.ini 2>&1)
check "Slurm: exit code 5 (replicas diverged) is passed on, explained, not requeued" \
  test $? -eq 5 -a -z "$(grep 'scontrol' "$STUB_LOG")" -a -n "$(grep 'exit code 5: the data-parallel replicas diverged' <<<"$out")"
: >"$STUB_LOG"
SLURM_JOB_ID=56 HPCTRAIN_LAUNCHER=mpirun STUB_RC=10 jobscripts/slurm/train.sbatch inputs/mnist_mlp.ini >/dev/null 2>&1
check "Slurm: exit code 10 -> scontrol requeue" grep -qx "scontrol requeue 56" "$STUB_LOG"

# ---- LSF ----
: >"$STUB_LOG"
LSB_DJOB_HOSTFILE=$tmp/hosts LSB_JOBID=77 STUB_RC=0 jobscripts/lsf/train.lsf inputs/mnist_cnn.ini --set train.steps=5 \
  >/dev/null 2>&1
check "LSF: exit 0" test $? -eq 0
check "LSF: mpirun with 4 ranks from the host file, arguments passed on" \
  grep -qF "mpirun -np 4 --hostfile $tmp/hosts --bind-to none build/trainer inputs/mnist_cnn.ini --set train.steps=5 --set run.out_dir=runs/hpctrain-77 --set checkpoint.resume=auto" "$STUB_LOG"
: >"$STUB_LOG"
LSB_DJOB_HOSTFILE=$tmp/hosts LSB_JOBID=78 HPCTRAIN_INI=inputs/mnist_mlp.ini STUB_RC=10 jobscripts/lsf/train.lsf >/dev/null 2>&1
check "LSF: exit code 10 -> brequeue of the job (INI from HPCTRAIN_INI)" grep -qx "brequeue 78" "$STUB_LOG"
: >"$STUB_LOG"
out=$(LSB_DJOB_HOSTFILE=$tmp/hosts LSB_JOBID=79 HPCTRAIN_INI=inputs/mnist_mlp.ini STUB_RC=4 jobscripts/lsf/train.lsf 2>&1)
check "LSF: exit code 4 is passed on, explained, not requeued" \
  test $? -eq 4 -a -z "$(grep brequeue "$STUB_LOG")" -a -n "$(grep 'exit code 4: a checkpoint could not be written' <<<"$out")"
# ... also after LSF's SIGUSR1 to every process of the job (its own session here), which once
# ended the script's guard (a subshell does not keep the script's traps)
LSB_DJOB_HOSTFILE=$tmp/hosts HPCTRAIN_OUT_DIR=$tmp/lsf-report STUB_REPORT=1 HPCTRAIN_ABORT_GRACE_S=1 \
  setsid jobscripts/lsf/train.lsf inputs/mnist_mlp.ini >"$tmp/lsf-report.log" 2>&1 &
job=$!
for _ in $(seq 100); do [ -s "$tmp/lsf-report/reports/node2.txt" ] && break; sleep 0.1; done
sleep 0.3
kill -USR1 -- -$job
t0=$SECONDS
wait $job
rc=$?
check "LSF: after SIGUSR1 to the whole job, a launcher left running after a watchdog report is ended: exit 3 ($rc)" \
  test $rc -eq 3 -a $((SECONDS - t0)) -le 10 -a -n "$(grep 'a watchdog reported .* ending it' "$tmp/lsf-report.log")" \
  -a -n "$(grep 'SIGUSR1 received' "$tmp/lsf-report.log")"
: >"$STUB_LOG"
LSB_DJOB_HOSTFILE=$tmp/hosts LSB_JOBID=80 STUB_RC=10 STUB_SLEEP=2 jobscripts/lsf/train.lsf inputs/mnist_mlp.ini \
  >"$tmp/lsf-usr1.log" 2>&1 &
sleep 1
kill -USR1 $!
wait $!
check "LSF: SIGUSR1 to the script: it waits for the launcher's exit 10, then brequeue" grep -qx "brequeue 80" "$STUB_LOG"
out=$(jobscripts/lsf/train.lsf inputs/mnist_mlp.ini 2>&1)
check "LSF: outside a job -> exit 2 with a message" test $? -eq 2 -a -n "$(grep 'LSB_DJOB_HOSTFILE' <<<"$out")"

# ---- Cloud machine ----
: >"$STUB_LOG"
STUB_GPUS=3 STUB_RC=0 jobscripts/cloud/train.sh inputs/mnist_cnn.ini >/dev/null 2>&1
check "cloud: 3 GPUs found -> 3 ranks on cuda, fixed run directory" \
  grep -qE "mpirun (--allow-run-as-root )?-np 3 --bind-to none .*/build/trainer inputs/mnist_cnn.ini --set run.device=cuda --set run.out_dir=runs/cloud-mnist_cnn --set checkpoint.resume=auto" "$STUB_LOG"
: >"$STUB_LOG"
HPCTRAIN_RANKS=2 STUB_GPUS=0 STUB_RC=10 jobscripts/cloud/train.sh inputs/mnist_mlp.ini >/dev/null 2>&1
check "cloud: no GPU -> HPCTRAIN_RANKS ranks on cpu; exit 10 passed on" \
  test $? -eq 10 -a -n "$(grep -E -- '-np 2 .*run.device=cpu' "$STUB_LOG")"
: >"$STUB_LOG"
HPCTRAIN_RETRY=1 HPCTRAIN_RANKS=2 STUB_RC="10 0" jobscripts/cloud/train.sh inputs/mnist_mlp.ini >/dev/null 2>&1
check "cloud: HPCTRAIN_RETRY runs again after exit 10 (and resumes: same run directory)" \
  test $? -eq 0 -a "$(grep -c '^mpirun' "$STUB_LOG")" -eq 2
# And for real on this machine (no GPU: 2 CPU ranks), twice: the second run resumes. (The trainer
# of the build under test: HPCTRAIN_BUILD_DIR, which CTest sets.)
for n in 1 2; do
  out=$(HPCTRAIN_MPIRUN=/usr/bin/mpirun HPCTRAIN_RANKS=2 HPCTRAIN_OUT_DIR=$tmp/cloud STUB_GPUS=0 \
    HPCTRAIN_TRAINER="${HPCTRAIN_BUILD_DIR:-$PWD/build}/trainer" \
    jobscripts/cloud/train.sh inputs/mnist_mlp.ini --set train.steps=$((10 * n)) $([ $n = 2 ] && echo --resume-changed) 2>&1)
  rc=$?
  check "cloud, real run $n: exit 0" test $rc -eq 0
done
check "cloud, real run 2: resumed from the first run's checkpoint" grep -q "^resumed from .*ckpt-00000010.h5" <<<"$out"
finish
