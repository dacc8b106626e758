#!/bin/sh
# test-mpi.sh — several ranks under mpirun: the communicators (test-comm, with 2 and 4 ranks and
# alone), then the whole loop on 2 and 4 ranks: profile, plan every policy for those ranks at a
# budget below the model data, replay each, with every rank inside its budget, moving and
# receiving what the plan predicts, and the same losses bitwise from run to run; resuming from
# per-rank checkpoints; ranks started with other data, another plan or a plan for another world.
# Skipped, saying so, in a build without MPI or without mpirun.
. "$STW_SRCDIR/tests/tap.sh"
B=$STW_BUILDDIR
if ! grep -q '^#define STW_HAVE_MPI 1' "$B/config.h" 2>/dev/null; then
  echo "1..0 # SKIP this build has no MPI (Debian: libopenmpi-dev openmpi-bin)"
  exit 0
fi
if ! command -v mpirun > /dev/null 2>&1; then
  echo "1..0 # SKIP mpirun is not installed (Debian: openmpi-bin)"
  exit 0
fi
export OMPI_MCA_rmaps_base_oversubscribe=1

out=$("$B/tests/test-comm" 2>&1); tap_result $? "the communicators alone: one rank" "$out"
for n in 2 4; do
  # shellcheck disable=SC2086
  out=$($MPIRUN -np $n "$B/tests/test-comm" 2>&1)
  st=$?
  oks=$(printf '%s\n' "$out" | grep -c "^ok .* ($n ranks)")
  [ "$st" = 0 ] && [ "$oks" = 8 ]; tap_result $? "the communicators on $n ranks (8 checks)" "$out"
done
S=$STOWAGE
D=$STW_SRCDIR/README.md
M="--layers 2 --width 32 --heads 4 --context 16 --batch 2 --data $D"
T=$TAP_TMP
losses() { grep '^step' "$1" | awk '{print $4}' | tr '\n' ' '; }
# a prediction of a plan file, by name
pred() { sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p" "$1" | head -n1; }
# bytes as the CLI prints them, for comparing with a plan's
bytes() { echo "$1 $2" | awk '{ m = $2 == "B" ? 1 : $2 == "KiB" ? 1024 : $2 == "MiB" ? 1048576 : 1073741824; printf "%.0f", $1 * m }'; }

for n in 2 4; do
  # shellcheck disable=SC2086
  $MPIRUN -np $n $S train $M --steps 2 --profile "$T/t$n.json" > "$T/prof$n.log" 2>&1
  grep -q "(rank 0 of $n)" "$T/prof$n.log" 2>/dev/null || $S inspect "$T/t$n.json" | grep -q "(rank 0 of $n)"
  tap_result $? "profiling on $n ranks records rank 0's trace of $n" "$(tail -3 "$T/prof$n.log")"
  replayed=0
  for policy in stowage patrickstar zero-offload zero-infinity gemini-static lru; do
    if ! $S plan "$T/t$n.json" --gpu 400KiB --policy $policy -o "$T/p$n-$policy.json" > "$T/plan.log" 2>&1; then
      continue # this policy does not fit the budget; the planner says why
    fi
    # shellcheck disable=SC2086
    $MPIRUN -np $n $S train $M --steps 4 --plan "$T/p$n-$policy.json" > "$T/r$n-$policy.log" 2>&1
    st=$?
    last=$(grep "^trained" "$T/r$n-$policy.log" | tail -n1)
    h2d=$(grep '^step' "$T/r$n-$policy.log" | tail -n1 | sed 's/.*H2D \([0-9.]*\) \([KMG]*i*B\).*/\1 \2/')
    d2h=$(grep '^step' "$T/r$n-$policy.log" | tail -n1 | sed 's/.*D2H \([0-9.]*\) \([KMG]*i*B\).*/\1 \2/')
    comm=$(echo "$last" | sed -n 's/.*collectives \([0-9.]*\) \([KMG]*i*B\) received.*/\1 \2/p')
    [ "$st" = 0 ] &&
      echo "$last" | grep -q "device peak .* of 400.00 KiB on every rank; collectives .* received per rank and step ([0-9.]* ms waiting for them); 0 deviations" &&
      ! echo "$last" | grep -q "different bytes" &&
      [ "$(bytes $h2d)" = "$(pred "$T/p$n-$policy.json" h2d_bytes)" ] &&
      [ "$(bytes $d2h)" = "$(pred "$T/p$n-$policy.json" d2h_bytes)" ] &&
      [ "$(bytes $comm)" = "$(pred "$T/p$n-$policy.json" comm_bytes)" ]
    tap_result $? "$n ranks replay the $policy plan: inside the budget on every rank, the predicted bytes over PCIe and in collectives, no deviation" "$last" "H2D $h2d, D2H $d2h, collectives $comm; predicted $(pred "$T/p$n-$policy.json" h2d_bytes), $(pred "$T/p$n-$policy.json" d2h_bytes), $(pred "$T/p$n-$policy.json" comm_bytes)"
    replayed=$((replayed + 1))
  done
  [ "$replayed" -ge 3 ]; tap_result $? "$n ranks: at least three policies' plans replayed ($replayed)"
  # bitwise the same from run to run, and as profile mode's data parallelism
  # shellcheck disable=SC2086
  $MPIRUN -np $n $S train $M --steps 4 --plan "$T/p$n-stowage.json" > "$T/again$n.log" 2>&1
  # shellcheck disable=SC2086
  $MPIRUN -np $n $S train $M --steps 4 > "$T/dp$n.log" 2>&1
  a=$(losses "$T/r$n-stowage.log"); b=$(losses "$T/again$n.log"); c=$(losses "$T/dp$n.log")
  [ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" = "$c" ]
  tap_result $? "$n ranks: the replay's losses are bitwise the same from run to run and as without a plan" "$a" "$b" "$c"
  # one rank training the same global batches: the same within 1e-5 (the sums run in another order)
  # shellcheck disable=SC2086
  $S train --layers 2 --width 32 --heads 4 --context 16 --batch $((2 * n)) --data "$D" --steps 4 > "$T/one$n.log" 2>&1
  one=$(losses "$T/one$n.log")
  printf '%s\n%s\n' "$a" "$one" | awk 'NR == 1 { split($0, x) } NR == 2 { n = split($0, y); for (i = 1; i <= n; i++) { d = x[i] - y[i]; if (d < 0) d = -d; if (d > 1e-5 * y[i]) bad = 1 } } END { exit bad }'
  tap_result $? "$n ranks train within 1e-5 of one rank on the same global batches" "$a" "$one"
done

# checkpoints, a set of one file per rank committed by a manifest: resuming gives the
# uninterrupted losses; another world refused; a file of another run refused
# shellcheck disable=SC2086
$MPIRUN -np 2 $S train $M --steps 6 --plan "$T/p2-stowage.json" > "$T/six.log" 2>&1
# shellcheck disable=SC2086
$MPIRUN -np 2 $S train $M --steps 3 --plan "$T/p2-stowage.json" --checkpoint "$T/c.ckpt" --checkpoint-every 1 > "$T/save.log" 2>&1
# shellcheck disable=SC2086
$MPIRUN -np 2 $S train $M --steps 3 --plan "$T/p2-stowage.json" --resume "$T/c.ckpt" > "$T/rest.log" 2>&1
# the set of step 3 alone is left: the earlier sets' files went once it committed
[ "$(head -n1 "$T/c.ckpt")" = "stowage-checkpoint-set 1" ] && grep -q '^step 3$' "$T/c.ckpt" &&
  [ -f "$T/c.ckpt.rank-0-of-2.step-3" ] && [ -f "$T/c.ckpt.rank-1-of-2.step-3" ] &&
  [ "$(ls "$T" | grep -c '^c\.ckpt\.rank-')" = 2 ] &&
  grep -q "wrote $T/c.ckpt (the set's manifest) and $T/c.ckpt.rank-R-of-2.step-3, one file per rank" "$T/save.log" &&
  [ "$(losses "$T/six.log" | cut -d' ' -f4-6)" = "$(losses "$T/rest.log" | cut -d' ' -f1-3)" ]
tap_result $? "2 ranks resume from their checkpoint set with the same losses" "$(losses "$T/six.log")" "$(losses "$T/rest.log")" "$(cat "$T/save.log")"
# a set whose manifest is not committed yet (a rank killed while the files were written) leaves
# the last set to resume: the files of step 4 without their manifest change nothing
cp "$T/c.ckpt.rank-0-of-2.step-3" "$T/c.ckpt.rank-0-of-2.step-4"
# shellcheck disable=SC2086
$MPIRUN -np 2 $S train $M --steps 3 --plan "$T/p2-stowage.json" --resume "$T/c.ckpt" > "$T/rest2.log" 2>&1
[ "$(losses "$T/rest.log")" = "$(losses "$T/rest2.log")" ]
tap_result $? "a set without its manifest is not resumed: the last committed one is" "$(losses "$T/rest2.log")"
# the file of another run at the same step, put in the set's place, is refused by its digest
mkdir -p "$T/other"
# shellcheck disable=SC2086
$MPIRUN -np 2 $S train $M --seed 7 --steps 3 --plan "$T/p2-stowage.json" --checkpoint "$T/other/c.ckpt" > /dev/null 2>&1
cp "$T/other/c.ckpt.rank-1-of-2.step-3" "$T/c.ckpt.rank-1-of-2.step-3"
# shellcheck disable=SC2086
out=$(timeout 120 $MPIRUN -np 2 $S train $M --steps 1 --plan "$T/p2-stowage.json" --resume "$T/c.ckpt" 2>&1)
st=$?
[ "$st" != 0 ] && [ "$st" != 124 ] &&
  echo "$out" | grep -q "c.ckpt.rank-1-of-2.step-3: not the file of rank 1 that the set $T/c.ckpt names"
tap_result $? "a rank's file of another run is refused, and the job ends (exit $st)" "$out"
# shellcheck disable=SC2086
out=$($MPIRUN -np 4 $S train $M --steps 1 --resume "$T/c.ckpt" 2>&1)
echo "$out" | grep -q "the checkpoint of 2 ranks (.*), and this run has 4: resume on the world size that wrote it"
tap_result $? "a checkpoint of 2 ranks is refused on 4" "$out"

# a checkpoint that cannot be written is found before the training, on every rank
# shellcheck disable=SC2086
out=$(timeout 120 $MPIRUN -np 2 $S train $M --steps 50 --checkpoint "$T/missing/c.ckpt" 2>&1)
st=$?
[ "$st" != 0 ] && [ "$st" != 124 ] && ! echo "$out" | grep -q '^step' &&
  echo "$out" | grep -q "$T/missing/c.ckpt: the checkpoint cannot be written there ($T/missing: No such file or directory)"
tap_result $? "an unwritable --checkpoint stops the ranks before step 1 (exit $st)" "$out"
# a rank that fails alone (its --resume file missing) ends the job at once, not at a timeout
start=$(date +%s)
# shellcheck disable=SC2086
out=$(timeout 120 $MPIRUN -np 1 $S train $M --steps 2 : -np 1 $S train $M --steps 2 --resume "$T/nothing.ckpt" 2>&1)
st=$?
[ "$st" != 0 ] && [ "$st" != 124 ] && [ $(( $(date +%s) - start )) -lt 60 ]
tap_result $? "a rank that fails alone ends the job promptly (exit $st in $(( $(date +%s) - start )) s)" "$out"
# every option that changes the training is compared before step 1, the first difference named
for opt in "--width 64" "--precision mixed" "--seed 9" "--lr 0.01" "--layers 3" "--steps 2" "--attention naive"; do
  # shellcheck disable=SC2086
  out=$(timeout 120 $MPIRUN -np 1 $S train $M --steps 1 : -np 1 $S train $M --steps 1 $opt 2>&1)
  st=$?
  name=${opt%% *}
  [ "$st" != 0 ] && [ "$st" != 124 ] && ! echo "$out" | grep -q '^step' &&
    echo "$out" | grep -q "the ranks disagree on the training's options: rank 1 has another $name than rank 0"
  tap_result $? "ranks started with another $name stop before training, naming it (exit $st)" "$out"
done

# bad input across ranks: another world's plan, other data, another plan
# shellcheck disable=SC2086
out=$($MPIRUN -np 4 $S train $M --steps 1 --plan "$T/p2-stowage.json" 2>&1)
echo "$out" | grep -q "the plan is for 2 ranks, and this run has 4: start 2 (mpirun -np 2), or plan for 4 (--gpus 4)"
tap_result $? "a plan for 2 ranks is refused on 4" "$out"
head -c 3000 "$D" > "$T/other.txt"
# shellcheck disable=SC2086
out=$(timeout 120 $MPIRUN -np 1 $S train $M --steps 1 : -np 1 $S train --layers 2 --width 32 --heads 4 --context 16 --batch 2 --data "$T/other.txt" --steps 1 2>&1)
echo "$out" | grep -q "the ranks disagree on the training text: rank 1 has another than rank 0"
tap_result $? "ranks started with other data stop before training" "$out"
# shellcheck disable=SC2086
out=$(timeout 120 $MPIRUN -np 1 $S train $M --steps 1 --plan "$T/p2-stowage.json" : -np 1 $S train $M --steps 1 --plan "$T/p2-lru.json" 2>&1)
echo "$out" | grep -q "the ranks disagree on the plan: rank 1 has another than rank 0"
tap_result $? "ranks started with other plans stop before training" "$out"
# the storage tier on 2 ranks: each rank's own chunks' optimizer state ("cpu-storage"), and
# their 16-bit parameters with it ("storage", at the least host memory any plan fits, found by
# bisection: where that window lies follows the chunk size, which follows the profiled times),
# in a file of its own under the directory; bitwise the losses of a plan that keeps everything
# resident, the bytes read and written each step the simulation's, the files gone at the end,
# and a checkpoint of it resumed to the same losses
M8="--layers 8 --width 32 --heads 4 --context 16 --batch 2 --data $D"
mkdir -p "$T/nvme"
# shellcheck disable=SC2086
$MPIRUN -np 2 $S train $M8 --steps 2 --profile "$T/t8-2.json" > /dev/null 2>&1
$S plan "$T/t8-2.json" --gpu 1GiB --hw RTX4090-24GB-PCIe4 -o "$T/p8-res.json" > /dev/null 2>&1
# shellcheck disable=SC2086
$MPIRUN -np 2 $S train $M8 --steps 6 --plan "$T/p8-res.json" > "$T/r8-res.log" 2>&1
# CPU Adam on fp32 chunks: each rank steps its own chunks in their compute copies (the plan
# says so), the weights there between steps; the unplanned run's losses bitwise
$S plan "$T/t8-2.json" --gpu 1MiB --hw RTX4090-24GB-PCIe4 -o "$T/p8-cpu.json" > "$T/p8-cpu.log" 2>&1
# shellcheck disable=SC2086
$MPIRUN -np 2 $S train $M8 --steps 6 --plan "$T/p8-cpu.json" > "$T/r8-cpu.log" 2>&1
# shellcheck disable=SC2086
$MPIRUN -np 2 $S train $M8 --steps 6 > "$T/r8-unplanned.log" 2>&1
grep -q "chunks CPU Adam ([0-9]* of them in their fp32 compute copies: 28 bytes an element, not 32)" "$T/p8-cpu.log" &&
  [ -n "$(losses "$T/r8-cpu.log")" ] && [ "$(losses "$T/r8-cpu.log")" = "$(losses "$T/r8-unplanned.log")" ]
tap_result $? "2 ranks step their fp32 chunks in their compute copies: the unplanned run's losses bitwise" "$(cat "$T/p8-cpu.log")" "$(losses "$T/r8-cpu.log")" "$(losses "$T/r8-unplanned.log")"
plan8() { # CPU OUT: plans the 2-rank trace at that host budget
  $S plan "$T/t8-2.json" --gpu 1MiB --cpu "$1" --hw RTX4090-24GB-PCIe4-2xNVMe --nvme 1GiB \
    --activations keep -o "$2" > "$2.log" 2>&1
}
lo=4294967296 hi=4299161600 # two processes' 2 GiB (fails); and 4 MiB more (fits)
while [ $((hi - lo)) -gt 1024 ]; do
  mid=$(((lo + hi) / 2))
  if plan8 $mid "$T/p8-min.json"; then hi=$mid; else lo=$mid; fi
done
plan8 $hi "$T/p8-params.json"
# and the least budget, in steps of 100 kB, whose plan keeps the parameters in host memory
for k in $(seq 1 40); do
  plan8 $((hi + 100000 * k)) "$T/p8-state.json" &&
    grep -q "storage .* optimizer state of 1.00 GiB on the storage tier" "$T/p8-state.json.log" && break
done
for kind in state params; do
  what="optimizer state of 1.00 GiB"
  [ $kind = params ] && what="optimizer state and 16-bit parameters of 1.00 GiB"
  # shellcheck disable=SC2086
  $MPIRUN -np 2 $S train $M8 --steps 3 --plan "$T/p8-$kind.json" --nvme-dir "$T/nvme" > "$T/r8-$kind.log" 2>&1
  st=$?
  sim=$($S simulate "$T/p8-$kind.json" "$T/t8-2.json" | sed -n 's/.*read and written: \(.*\) read, \(.*\) written$/storage read \1  written \2/p')
  [ $st = 0 ] && grep -q "storage .* $what on the storage tier" "$T/p8-$kind.json.log" &&
    [ "$(losses "$T/r8-$kind.log")" = "$(losses "$T/r8-res.log" | cut -d' ' -f1-3) " ] &&
    [ -n "$sim" ] && [ "$(grep -c "^step    [23] .*$sim\$" "$T/r8-$kind.log")" = 2 ] &&
    [ -z "$(ls "$T/nvme")" ]
  tap_result $? "2 ranks replay a plan with $what on storage: the resident plan's losses, the simulated storage bytes ($sim)" "$(cat "$T/p8-$kind.json.log")" "$(cat "$T/r8-$kind.log")" "$(losses "$T/r8-res.log")"
done
# shellcheck disable=SC2086
$MPIRUN -np 2 $S train $M8 --steps 3 --plan "$T/p8-params.json" --nvme-dir "$T/nvme" --checkpoint "$T/c8.ckpt" > /dev/null 2>&1
# shellcheck disable=SC2086
$MPIRUN -np 2 $S train $M8 --steps 3 --plan "$T/p8-params.json" --nvme-dir "$T/nvme" --resume "$T/c8.ckpt" > "$T/r8-resumed.log" 2>&1
[ "$(losses "$T/r8-resumed.log")" = "$(losses "$T/r8-res.log" | cut -d' ' -f4-6) " ] && [ -z "$(ls "$T/nvme")" ]
tap_result $? "2 ranks resume a checkpoint of parameters on storage to the resident plan's losses" "$(losses "$T/r8-resumed.log")" "$(losses "$T/r8-res.log")"
# the collectives probed on 2 ranks become the profile's interconnect, which the planner reads
# shellcheck disable=SC2086
out=$($MPIRUN -np 2 $S probe --device host --collectives -o "$T/ranks.json" 2>&1)
st=$?
[ "$st" = 0 ] && echo "$out" | grep -q "^16.00 MiB " && echo "$out" | grep -q "^collectives of 2 ranks: [0-9.]* GB/s and [0-9]* ns per step" &&
  grep -q '"kind": *"mpi"' "$T/ranks.json" && $S plan "$T/t2.json" --gpu 400KiB --hw "$T/ranks.json" -o "$T/p2-probed.json" > /dev/null &&
  [ "$(pred "$T/p2-probed.json" comm_ns)" -gt 0 ]
tap_result $? "probe --collectives on 2 ranks writes an MPI interconnect the planner uses" "$out"
out=$($S probe --collectives 2>&1)
[ $? = 2 ] && echo "$out" | grep -q "probe: --collectives measures the collectives between ranks: start it under mpirun with 2 ranks or more"
tap_result $? "probe --collectives on one rank says to start it under mpirun" "$out"
# a rank that dies: the others do not hang (mpirun ends the job, and no collective waits forever)
# shellcheck disable=SC2086
timeout 120 $MPIRUN -np 1 $S train $M --steps 3 : -np 1 $S train $M --steps 3 --lr nonsense > "$T/dead.log" 2>&1
st=$?
[ "$st" != 0 ] && [ "$st" != 124 ]; tap_result $? "a rank that dies stops the job with an error, not a hang (exit $st)" "$(tail -5 "$T/dead.log")"
tap_done
