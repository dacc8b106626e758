#!/bin/sh
# scripts/main.sh — builds stowage and runs the main job on the bundled default: train a small
# GPT (4 blocks, width 128) on this machine's GPL-3 text (or the README) with its model state in stowage chunks on an
# emulated device, recording the trace of an iteration; plan that trace for a device budget well
# below the model data; prove the plan sound; train again replaying the plan, and show that the
# losses are bitwise the same and the device never exceeded its budget. Then the same on two
# data-parallel ranks under mpirun: each trains half of every global batch, the plan for both
# shares the model state between them in chunk groups. Outputs go to out/.
set -e
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh >/dev/null
mkdir -p out
data=/usr/share/common-licenses/GPL-3
[ -r "$data" ] || data=README.md
steps=20
model="--layers 4 --width 128 --heads 4 --context 32 --batch 2"
echo "== 1. train $steps steps with everything resident, recording a trace"
./stowage train $model --data "$data" --steps $steps --profile out/train-trace.json | tee out/resident.log
echo
echo "== 2. plan that trace for a 4 MiB device (the model data alone is 12.67 MiB)"
./stowage plan out/train-trace.json --gpu 4MiB -o out/train-plan.json
./stowage check out/train-plan.json out/train-trace.json
echo
echo "== 3. train again, replaying the plan on a 4 MiB device"
./stowage train $model --data "$data" --steps $steps --plan out/train-plan.json | tee out/replay.log
echo
if [ "$(grep '^step' out/resident.log | awk '{print $4}')" = "$(grep '^step' out/replay.log | awk '{print $4}')" ]; then
  echo "the $steps losses are bitwise the same with and without the plan"
else
  echo "the losses differ" >&2
  exit 1
fi
echo
echo "== 4. the same model on 2 ranks (mpirun): train with everything resident, recording a trace"
if ! command -v mpirun > /dev/null; then
  echo "mpirun is missing: install Open MPI (Debian: openmpi-bin libopenmpi-dev; scripts/bootstrap.sh does) and build again" >&2
  exit 1
fi
mpirun="mpirun --allow-run-as-root --oversubscribe --mca btl self,vader --mca btl_vader_single_copy_mechanism none -x OMP_NUM_THREADS=1"
$mpirun -np 2 ./stowage train $model --data "$data" --steps $steps --profile out/ranks-trace.json | tee out/ranks-resident.log
echo
echo "== 5. plan it for 2 ranks with a 4 MiB device each (a rank's share of the model data is 6.33 MiB)"
./stowage plan out/ranks-trace.json --gpu 4MiB -o out/ranks-plan.json
./stowage check out/ranks-plan.json out/ranks-trace.json
echo
echo "== 6. train on 2 ranks again, replaying the plan"
$mpirun -np 2 ./stowage train $model --data "$data" --steps $steps --plan out/ranks-plan.json | tee out/ranks-replay.log
echo
if [ "$(grep '^step' out/ranks-resident.log | awk '{print $4}')" = "$(grep '^step' out/ranks-replay.log | awk '{print $4}')" ]; then
  echo "on 2 ranks too, the $steps losses are bitwise the same with and without the plan"
else
  echo "the losses on 2 ranks differ" >&2
  exit 1
fi
