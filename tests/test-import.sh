#!/bin/sh
# test-import.sh — stowage import on the real PyTorch profiler files of ../shared/data/pytorch
# (their READMEs give the counts asserted here) and on broken ones.
. "$STW_SRCDIR/tests/tap.sh"
S=$STOWAGE
F=$STW_SRCDIR/tests/fixtures
T=$TAP_TMP

# the shared data sits beside the checkout; a distcheck's tree is a level or two further down
D=
for up in .. ../.. ../../.. ../../../..; do
  if [ -d "$STW_SRCDIR/$up/shared/data/pytorch" ]; then D=$STW_SRCDIR/$up/shared/data/pytorch; break; fi
done
K=$D/kineto/worker0.1623143089861.pt.trace.json.gz
K2=$D/kineto/worker0.1623143566756.pt.trace.json.gz
HTA=$D/HolisticTraceAnalysis/df_index_resolver.json.gz
MI=$D/HolisticTraceAnalysis/mi250_minitoy_train_ROCm6_2_kineto.json.gz
ADD=$D/HolisticTraceAnalysis/benchmark_simple_add_trace.json.gz
ADD_ET=$D/HolisticTraceAnalysis/benchmark_simple_add_et.json.gz
TL=$D/HolisticTraceAnalysis/memory_timeline.raw.gz

# json VALUE KEY FILE: the report's member KEY is VALUE
json_is() {
  got=$(grep "\"$2\":" "$3" | head -n1 | sed 's/.*:[[:space:]]*//; s/,$//')
  [ "$got" = "$1" ]; tap_result $? "$4" "$2 is '$got', expected '$1'"
}

if [ -z "$D" ]; then
  tap_skip "the real PyTorch traces (../shared/data/pytorch) are not beside this tree"
else
  # ResNet-50 on a V100, the 2021 format: Operator events, [memory] without Addr
  $S import "$K" -o "$T/resnet.json" --json > "$T/resnet.rep" 2>&1
  tap_result $? "the 2021 Kineto trace of ResNet-50 imports" "$(cat "$T/resnet.rep")"
  json_is 10 iteration "$T/resnet.rep" "the last complete iteration is ProfilerStep#10"
  json_is 6 iterations "$T/resnet.rep" "6 ProfilerStep# markers"
  json_is 75718 events "$T/resnet.rep" "every one of the 75,718 events is read"
  json_is 161 params "$T/resnet.rep" "ResNet-50's 161 parameter tensors, from the recorded shapes"
  json_is 102228128 param_bytes "$T/resnet.rep" "ResNet-50's 25,557,032 fp32 parameters"
  json_is 756 ops "$T/resnet.rep" "756 ops: 237 forward, 358 backward, one optimizer op per parameter"
  json_is 1370 memory_events "$T/resnet.rep" "the iteration's 1,370 [memory] events on the GPU"
  json_is false has_total_allocated "$T/resnet.rep" "the older [memory] form has no Total Allocated"
  expect 0 "parameters  25,557,032 in 161 tensors" "the imported trace inspects" -- $S inspect "$T/resnet.json"
  expect 0 "device      Tesla V100-DGXS-32GB, 31.74 GiB" "its device from deviceProperties" -- $S inspect "$T/resnet.json"
  expect 0 "conv2d.0.weight" "parameters are named by op and occurrence" -- grep -o '"conv2d.0.weight"' "$T/resnet.json"
  expect 0 "GPU peak     3.00 GiB of 3.00 GiB" "the imported trace plans" -- $S plan "$T/resnet.json" --gpu 3GiB --hw V100-32GB-PCIe3 -o "$T/resnet-plan.json"
  expect 0 "stowage " "and compares" -- $S compare "$T/resnet.json" --gpu 3GiB --hw V100-32GB-PCIe3
  $S import "$K" --iteration 7 -o "$T/r7.json" --json > "$T/r7.rep" 2>&1
  json_is 7 iteration "$T/r7.rep" "--iteration 7 takes ProfilerStep#7"
  json_is 161 params "$T/r7.rep" "the same parameters in another iteration"
  $S import "$K2" -o "$T/resnet2.json" --json > "$T/resnet2.rep" 2>&1
  json_is 21 iteration "$T/resnet2.rep" "the second window's last step is ProfilerStep#21"
  json_is 756 ops "$T/resnet2.rep" "the second window: the same ops"
  expect 1 "no ProfilerStep#3: the trace holds 5, 6, 7, 8, 9, 10" "an iteration the trace lacks" -- $S import "$K" --iteration 3 -o "$T/x.json"

  # 2 V100s, rank 1, the newer format: [memory] with Addr and Total Allocated, out of time order
  expect 1 "the trace shows no parameters: record with record_shapes=True" "a trace without shapes or tensor identity is refused" -- $S import "$HTA" -o "$T/x.json"
  $S import "$HTA" --params-from-memory -o "$T/hta.json" --json > "$T/hta.rep" 2>&1
  tap_result $? "with --params-from-memory it imports" "$(cat "$T/hta.rep")"
  json_is 6 iteration "$T/hta.rep" "the HTA trace's last step is ProfilerStep#6"
  json_is 1 device_id "$T/hta.rep" "the CUDA device is the only one in the file, 1"
  json_is true has_total_allocated "$T/hta.rep" "the newer [memory] form"
  json_is 4096614400 allocated_at_start "$T/hta.rep" "Total Allocated before the iteration: 4,096,614,400"
  json_is 6629508096 allocated_peak "$T/hta.rep" "the file's largest Total Allocated: 6,629,508,096"
  json_is 2532893696 peak_above_start "$T/hta.rep" "the running sum's peak equals the file's own Total Allocated peak minus its start"
  json_is 4096614400 param_bytes "$T/hta.rep" "the model state held at the start, one unattributed tensor"
  expect 0 '"params_from_memory":4096614400' "the guess is recorded in the trace's source" -- grep -F '"params_from_memory":4096614400' "$T/hta.json"
  expect 1 "no CUDA device 0 in the iteration: it has 1" "a device the trace lacks" -- $S import "$HTA" --params-from-memory --device-id 0 -o "$T/x.json"

  # AMD MI250, a 2025 trace: one Linear layer, a stub second step
  $S import "$MI" -o "$T/mi.json" --json > "$T/mi.rep" 2>&1
  json_is 1 iteration "$T/mi.rep" "the stub ProfilerStep#2 is not complete: #1 is imported"
  json_is 2 params "$T/mi.rep" "the Linear layer's weight and bias"
  json_is 66048 param_bytes "$T/mi.rep" "128 x 128 + 128 fp32 parameters"
  json_is 17 ops "$T/mi.rep" "17 ops"

  # the execution trace of the same run, linked by rf_id and name
  $S import "$ADD" --et "$ADD_ET" --iteration whole -o "$T/add.json" --json > "$T/add.rep" 2>&1
  tap_result $? "the HTA benchmark imports whole with its execution trace" "$(cat "$T/add.rep")"
  json_is 38 et_nodes "$T/add.rep" "the execution trace's 38 nodes are read"
  json_is 36 et_linked "$T/add.rep" "all 36 op events (28 cpu_ops, 8 annotations) link to a node of the same name"
  mkdir -p "$T/chakra" && tar xzf "$D/chakra/1.0.2-chakra.0.0.4.tgz" -C "$T/chakra" 2>/dev/null
  expect 1 "the execution trace links 1 of 36 ops but shows no parameters" "the nested 1.0.2-chakra layout reads; another run's trace links nothing useful" -- $S import "$ADD" --et "$T/chakra/1.0.2-chakra.0.0.4.json" --iteration whole -o "$T/x.json"
  expect 1 "--et expects an execution trace" "--et given a Kineto trace" -- $S import "$ADD" --et "$ADD" --iteration whole -o "$T/x.json"

  # the memory timeline of HTA's test data, paired with the hand-made trace: as it is, its times
  # lie outside the timeline's, as another run's would; placed by baseTimeNanoseconds in the
  # timeline's second, it reads (the counts are the timeline file's own)
  expect 1 "memory_timeline.raw.gz: no row of the memory timeline (1696966047096061952 to 1696966048083248128 ns) falls in the iteration (10000 to 900000 ns: the trace's times from its baseTimeNanoseconds, 0): a timeline of another run?" \
    "a memory timeline of another run is refused" -- $S import "$F/pytorch/tied-kineto.json" --memory-timeline "$TL" -o "$T/x.json"
  sed 's/"schemaVersion": 1,/"schemaVersion": 1, "baseTimeNanoseconds": 1696966047500000000,/' "$F/pytorch/tied-kineto.json" > "$T/tied-at.json"
  $S import "$T/tied-at.json" --memory-timeline "$TL" -o "$T/tl.json" --json > "$T/tl.rep" 2>&1
  tap_result $? "a memory timeline is read with a trace" "$(cat "$T/tl.rep")"
  json_is 16845 timeline_rows "$T/tl.rep" "the timeline's 16,845 rows"
  json_is 3082832104 timeline_peak "$T/tl.rep" "its peak of 3,082,832,104 bytes"
  json_is 2592465920 activation "$T/tl.rep" "2,592,465,920 bytes of activations at the peak"
  json_is 102440608 parameter "$T/tl.rep" "102,440,608 bytes of parameters at the peak"
  json_is 102228128 optimizer_state "$T/tl.rep" "102,228,128 bytes of optimizer state at the peak"
  json_is 67858432 gradient "$T/tl.rep" "67,858,432 bytes of gradients at the peak"
  expect 1 "--memory-timeline expects export_memory_timeline_raw's rows, not a kineto file" "--memory-timeline given a Kineto trace" -- $S import "$F/pytorch/tied-kineto.json" --memory-timeline "$K" -o "$T/x.json"

  # no iteration marker
  expect 1 "no iteration marker (ProfilerStep#N)" "a trace without ProfilerStep# is refused" -- $S import "$ADD" -o "$T/x.json"
  expect 1 "no iteration marker (ProfilerStep#N node)" "an execution trace alone without a step is refused" -- $S import "$ADD_ET" -o "$T/x.json"
  expect 1 "this is a memory timeline, which has no ops" "a memory timeline alone is refused" -- $S import "$TL" -o "$T/x.json"
  expect 1 "--kind et, but the file is a kineto file" "--kind that does not match the file" -- $S import "$K" --kind et -o "$T/x.json"

  # broken files
  head -c 300000 "$K" > "$T/truncated.json.gz"
  expect 1 "truncated.json.gz: cannot be read" "a truncated gzip file" -- $S import "$T/truncated.json.gz" -o "$T/x.json"
  gzip -dc "$K" | head -c 2000000 > "$T/cut.json"
  expect 1 "cut.json: the file ends at byte 2000000 inside a value: truncated?" "a JSON document cut short" -- $S import "$T/cut.json" -o "$T/x.json"
  test ! -e "$T/x.json"; tap_result $? "no output is written for a broken input"
fi

# a hand-made pair: a tiny LM whose head is tied to its embedding
P=$F/pytorch
$S import "$P/tied-kineto.json" -o "$T/tied-shapes.json" --json > "$T/tied1.rep" 2>&1
json_is 4 params "$T/tied1.rep" "from shapes alone the tied head is a parameter of its own: 4"
json_is 400 param_bytes "$T/tied1.rep" "400 bytes of parameters from shapes"
json_is 1 kernels "$T/tied1.rep" "the kernel is found through its runtime call's correlation id"
json_is 5904 allocated_at_start "$T/tied1.rep" "Total Allocated before the first event of the iteration"
json_is 7168 peak_above_start "$T/tied1.rep" "the peak above the iteration's start"
$S import "$P/tied-kineto.json" --et "$P/tied-et.json" -o "$T/tied.json" --json > "$T/tied2.rep" 2>&1
json_is 3 params "$T/tied2.rep" "with the execution trace the tied weight is one tensor: 3"
json_is 240 param_bytes "$T/tied2.rep" "240 bytes: the embedding counted once"
json_is '"the execution trace"' param_source "$T/tied2.rep" "the parameters' source is said"
# an execution trace whose parents form a cycle (the step under the optimizer's add), or with two
# nodes of one id: the walk from the root would drop the cycle's nodes and a link take either node
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); d["nodes"][1]["parent"] = 7; print(json.dumps(d))' "$P/tied-et.json" > "$T/cycle-et.json"
expect 1 "cycle-et.json: nodes[1] (id 2) is its own ancestor: the parents form a cycle (2 -> 7 -> 6 -> 2)" "an execution trace whose parents form a cycle" -- $S import "$T/cycle-et.json" -o "$T/x.json"
expect 1 "cycle-et.json: nodes[1] (id 2) is its own ancestor" "linked to a Kineto trace as well" -- $S import "$P/tied-kineto.json" --et "$T/cycle-et.json" -o "$T/x.json"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); d["nodes"][5]["id"] = 3; print(json.dumps(d))' "$P/tied-et.json" > "$T/dup-et.json"
expect 1 "dup-et.json: nodes[2] and nodes[5] have the same id, 3" "two nodes of one id" -- $S import "$P/tied-kineto.json" --et "$T/dup-et.json" -o "$T/x.json"
expect 0 '"embedding.0.weight"' "a parameter named by its role in the op that first reads it" -- grep -o '"embedding.0.weight"' "$T/tied.json"
expect 0 '{"name":"autograd::engine::evaluate_function: MmBackward0","stage":"bwd","params":[0],"grads":[0]' "the tied head's backward writes the embedding's gradient" -- grep -F '{"name":"autograd::engine::evaluate_function: MmBackward0","stage":"bwd","params":[0],"grads":[0]' "$T/tied.json"
expect 0 '"nonmodel_bytes":4096,"nonmodel_peak_bytes":5120' "non-model memory at an op's start and peak" -- grep -F '"nonmodel_bytes":4096,"nonmodel_peak_bytes":5120' "$T/tied.json"
expect 0 '"duration_ns":12000' "an op timed by its kernel" -- grep -F '"duration_ns":12000' "$T/tied.json"

printf '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "ts": 0, "dur": 9}, {"ph": "i", "name": "[memory]", "ts": 2, "args": {"Bytes": 9e18}}]}' > "$T/hugebytes.json"
expect 1 "hugebytes.json: traceEvents[1]: a [memory] event without Bytes, an integer of at most 2^53 either way" "a memory event of 9e18 bytes" -- $S import "$T/hugebytes.json" -o "$T/x.json"
# durations a trace cannot hold are refused at the event that has them, not at the trace built
printf '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "ts": 0, "dur": 9}, {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 1e300}]}' > "$T/longop.json"
expect 1 "longop.json: traceEvents[1]: an op without a name, a number ts and a dur from 0 to 2^53 ns" "an op of 1e300 us" -- $S import "$T/longop.json" -o "$T/x.json"
printf '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "ts": 0, "dur": 9e12}, {"ph": "i", "name": "[memory]", "ts": 1, "args": {"Bytes": 8, "Total Allocated": 4104}}, {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 8e12, "args": {"External id": 5}}, {"ph": "X", "cat": "kernel", "name": "k", "ts": 2, "dur": 5e12, "args": {"External id": 5}}, {"ph": "X", "cat": "kernel", "name": "k", "ts": 3, "dur": 5e12, "args": {"External id": 5}}]}' > "$T/longsum.json"
expect 1 "longsum.json: the iteration's ops take more than 2^53 ns (104 days) in all, what a trace may hold: the sum passes it at aten::mm (ts 1.000 us)" "two kernels of 5e12 us under one op" -- $S import "$T/longsum.json" --params-from-memory -o "$T/x.json"
printf '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "ts": 0, "dur": 9}, {"ph": "i", "name": "[memory]", "ts": 2, "args": {"Bytes": 8, "Total Allocated": -5}}]}' > "$T/negtotal.json"
expect 1 "negtotal.json: traceEvents[1]: a [memory] event whose Total Allocated is not an integer from 0 to 2^53" "a negative Total Allocated" -- $S import "$T/negtotal.json" -o "$T/x.json"
# 4,096 allocations of 2^52 bytes: a running sum would wrap a signed 64-bit count (a peak of 0 B
# beside a report of 8 EiB); the events are refused at the first that passes 2^53 moved in all
python3 -c 'import json; print(json.dumps({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "ts": 0, "dur": 9000}, {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 8000}] + [{"ph": "i", "name": "[memory]", "ts": 2 + i, "args": {"Bytes": 2**52}} for i in range(4096)]}))' > "$T/sum.json"
expect 1 "sum.json: traceEvents[4]: the iteration's [memory] events allocate and free more than 2^53 bytes (8 PiB) in all" "4,096 [memory] events of 2^52 bytes" -- $S import "$T/sum.json" -o "$T/x.json"
python3 -c 'print([[i, 1, 2**52, 4] for i in range(4096)])' > "$T/sum-tl.json"
expect 1 "sum-tl.json: \$[2]: the rows allocate and free more than 2^53 bytes (8 PiB) in all" "4,096 timeline rows of 2^52 bytes" -- $S import "$P/tied-kineto.json" --memory-timeline "$T/sum-tl.json" -o "$T/x.json"
printf ' []' > "$T/empty-tl.json"
expect 1 "empty-tl.json: the memory timeline has no rows" "an empty memory timeline is refused, not ignored" -- $S import "$P/tied-kineto.json" --memory-timeline "$T/empty-tl.json" -o "$T/empty-out.json"
test ! -e "$T/empty-out.json"; tap_result $? "... and writes no trace"
printf '[[1, 2, 100, 4], [2, 2, 50]]' > "$T/badrow.json"
expect 1 "badrow.json: \$[1]: expected [time, action, bytes, category 0-7]" "a timeline row of three" -- $S import "$P/tied-kineto.json" --memory-timeline "$T/badrow.json" -o "$T/x.json"
printf '[[0, 2, 100, 4], [10000, 2, 50, 4], [10000000, 4, -150, 4]]' > "$T/small-tl.json"
$S import "$P/tied-kineto.json" --memory-timeline "$T/small-tl.json" -o "$T/tl-small.json" > /dev/null 2>&1
expect 0 '"nonmodel_bytes":100,"nonmodel_peak_bytes":150' "non-model memory from the timeline's categories at an op" -- grep -F '"nonmodel_bytes":100,"nonmodel_peak_bytes":150' "$T/tl-small.json"

# a fresh GPT-2 (2 layers, width 64, tied head) from CPU PyTorch 2.15 with the execution trace
# observer and the memory timeline (tests/make-pytorch-trace.py made them): 120,576 parameters
G=$P/gpt2-small
$S import "$G-kineto.json.gz" --et "$G-et.json.gz" --memory-timeline "$G-timeline.raw.json.gz" -o "$T/gpt2.json" --json > "$T/gpt2.rep" 2>&1
tap_result $? "the PyTorch 2.15 trace imports with its execution trace and memory timeline" "$(head -c 600 "$T/gpt2.rep")"
json_is 28 params "$T/gpt2.rep" "GPT-2's 28 parameter tensors, the tied head once"
json_is 482304 param_bytes "$T/gpt2.rep" "120,576 fp32 parameters: the model's own count"
json_is 31 modules "$T/gpt2.rep" "31 nn.Module forwards in the iteration"
json_is 3 depth "$T/gpt2.rep" "the layers' depth found: the first at which a module class repeats"
json_is 3 iteration "$T/gpt2.rep" "the last of ProfilerStep#2 and #3"
json_is 3404 timeline_rows "$T/gpt2.rep" "the memory timeline's rows"
json_is 65 ops "$T/gpt2.rep" "65 ops: 24 forward, 12 backward (one per forward unit with a backward), 29 optimizer"
expect 0 '"name":"GPT2Model_0.GPT2Block_1.bwd","stage":"bwd","params":[14,15,16,17,18,19,20,21,22,23,24,25],"grads":[14,15,16,17,18,19,20,21,22,23,24,25]' "a block's backward is one op writing its 12 gradients" -- grep -F '"name":"GPT2Model_0.GPT2Block_1.bwd","stage":"bwd","params":[14,15,16,17,18,19,20,21,22,23,24,25],"grads":[14,15,16,17,18,19,20,21,22,23,24,25]' "$T/gpt2.json"
expect 0 '"name":"GPT2Model_0.Embedding_0.bwd","stage":"bwd","params":[0],"grads":[0]' "the embedding's backward writes the tied weight's gradient too" -- grep -F '"name":"GPT2Model_0.Embedding_0.bwd","stage":"bwd","params":[0],"grads":[0]' "$T/gpt2.json"
expect 0 '"GPT2Model_0.GPT2Block_1"' "an op per block, named by its module path" -- grep -o '"GPT2Model_0.GPT2Block_1"' "$T/gpt2.json"
expect 0 '"GPT2Model_0.GPT2Block_0.GPT2Attention_0.Conv1D_0.weight"' "parameters named by their module path" -- grep -o '"GPT2Model_0.GPT2Block_0.GPT2Attention_0.Conv1D_0.weight"' "$T/gpt2.json"
$S import "$G-et.json.gz" -o "$T/gpt2-et.json" --json > "$T/gpt2e.rep" 2>&1
tap_result $? "the execution trace alone imports" "$(head -c 600 "$T/gpt2e.rep")"
json_is 28 params "$T/gpt2e.rep" "alone it finds the same 28 parameter tensors"
json_is 482304 param_bytes "$T/gpt2e.rep" "of the same 120,576 parameters"
json_is true untimed "$T/gpt2e.rep" "and says it has no durations"
expect 0 '"no_durations":305' "the trace's source counts the untimed ops" -- grep -o '"no_durations":305' "$T/gpt2-et.json"
expect 1 "this is an execution trace already: --et goes with a Kineto trace" "an execution trace with --et" -- $S import "$G-et.json.gz" --et "$G-et.json.gz" -o "$T/x.json"
$S import "$G-kineto.json.gz" -o "$T/gpt2-shapes.json" --json > "$T/gpt2s.rep" 2>&1
json_is 29 params "$T/gpt2s.rep" "from shapes alone the tied head counts twice: 29"
json_is 547840 param_bytes "$T/gpt2s.rep" "547,840 bytes: the head's 16,384 parameters again"
expect 0 "GPU peak" "the fresh trace plans" -- $S plan "$T/gpt2.json" --gpu 2MiB -o "$T/gpt2-plan.json"

# files made here
printf '' > "$T/empty.json"
expect 1 "empty.json: not a PyTorch profiler file" "an empty file" -- $S import "$T/empty.json" -o "$T/x.json"
printf '\037\213garbage-not-deflate' > "$T/bad.json.gz"
expect 1 "bad.json.gz: cannot be read" "a corrupt gzip file" -- $S import "$T/bad.json.gz" -o "$T/x.json"
# gzip of several members (cat a.gz b.gz; pigz, bgzip) reads as gunzip reads it: the members'
# contents one after another; zeros after the last are ignored, other bytes refused
head -c 3000 "$P/tied-kineto.json" | gzip -c > "$T/multi.json.gz"
tail -c +3001 "$P/tied-kineto.json" | gzip -c >> "$T/multi.json.gz"
$S import "$T/multi.json.gz" -o "$T/multi.json" --json > "$T/multi.rep" 2>&1
json_is 26 events "$T/multi.rep" "a gzip file of two members reads whole: its 26 events"
json_is 12 ops "$T/multi.rep" "and its 12 ops"
cp "$T/multi.json.gz" "$T/padded.json.gz" && head -c 512 /dev/zero >> "$T/padded.json.gz"
$S import "$T/padded.json.gz" -o "$T/padded.json" --json > "$T/padded.rep" 2>&1
json_is 26 events "$T/padded.rep" "zeros after the last member are ignored"
cp "$T/multi.json.gz" "$T/junk.json.gz" && printf 'junk' >> "$T/junk.json.gz"
expect 1 "junk.json.gz: cannot be read: bytes after a gzip member that begin no other member" "other bytes after the last member" -- $S import "$T/junk.json.gz" -o "$T/x.json"
head -c $(($(wc -c < "$T/multi.json.gz") - 20)) "$T/multi.json.gz" > "$T/cut.json.gz"
expect 1 "the gzip data ends inside a member (truncated?)" "a gzip file cut inside its second member" -- $S import "$T/cut.json.gz" -o "$T/x.json"
expect 1 "not a regular file" "a device file" -- $S import /dev/zero -o "$T/x.json"
printf '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}, 5]}' > "$T/five.json"
expect 1 "five.json: traceEvents[1]: not a JSON object" "an event that is not an object" -- $S import "$T/five.json" --iteration whole -o "$T/x.json"
printf '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "ts": "x", "dur": 2}]}' > "$T/badts.json"
expect 1 "badts.json: traceEvents[0]: a ProfilerStep# event without a number ts and a dur from 0 to 2^53 ns" "a marker without times" -- $S import "$T/badts.json" -o "$T/x.json"
printf '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "ts": 0, "dur": 9, "pid": 1, "tid": 1}, {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2, "pid": 1, "tid": 1}, {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 3, "dur": 2, "pid": 2, "tid": 1}]}' > "$T/twopids.json"
expect 1 "the iteration has several processes (1, 2): choose one with --pid" "several processes are refused without --pid" -- $S import "$T/twopids.json" -o "$T/x.json"
python3 -c 'print("{\"traceEvents\": [" + "[" * 300 + "]" * 300 + "]}")' > "$T/deep.json"
expect 1 "deep.json: traceEvents[0] nests more than 256 deep" "an event nested 300 deep" -- $S import "$T/deep.json" -o "$T/x.json"
# hostile shapes: 20,000 ops or modules each inside the last, 200 names of 100 kB; each imports in
# bounded time and memory (timeout guards a hang) and no name in the trace passes 1,024 bytes
cat > "$T/hostile.py" <<'PY'
import json, sys
kind, n = sys.argv[1], int(sys.argv[2])
ev = [{"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "ts": 1, "pid": 1, "tid": 1, "s": "t",
       "args": {"Device Type": 1, "Device Id": 0, "Bytes": 1 << 20, "Total Allocated": 2 << 20}},
      {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "ts": 1, "dur": 4 * n + 100, "pid": 1, "tid": 1}]
for i in range(n):
    if kind == "ops":
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::op", "ts": 2 + i, "dur": 4 * n - 2 * i, "pid": 1, "tid": 1})
    elif kind == "modules":
        ev.append({"ph": "X", "cat": "python_function", "name": "nn.Module: Linear_%d" % i, "ts": 2 + i, "dur": 4 * n - 2 * i, "pid": 1, "tid": 1})
    else:
        ev.append({"ph": "X", "cat": "cpu_op", "name": "%06d" % i + "x" * 100000, "ts": 2 + 4 * i, "dur": 2, "pid": 1, "tid": 1})
if kind == "modules":
    ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 2 + n, "dur": 1, "pid": 1, "tid": 1})
json.dump({"traceEvents": ev}, sys.stdout)
PY
for kind in ops modules names; do
  n=20000; [ $kind = names ] && n=200
  python3 "$T/hostile.py" $kind $n > "$T/h-$kind.json"
  timeout 60 $S import "$T/h-$kind.json" --params-from-memory -o "$T/h-$kind.out.json" > "$T/h-$kind.rep" 2>&1
  tap_result $? "$n $kind, hostile, import within a minute" "$(head -c 600 "$T/h-$kind.rep")"
done
python3 -c 'import json, sys; print(*(len(json.load(open(f))["ops"]) for f in sys.argv[1:]))' \
  "$T/h-ops.out.json" "$T/h-modules.out.json" "$T/h-names.out.json" > "$T/h-counts" 2>&1
expect 0 "2 2 201" "nested ops are one op and the optimizer's; 200 names and the optimizer's" -- cat "$T/h-counts"
python3 -c 'import json, sys; n = [o["name"] for f in sys.argv[1:] for o in json.load(open(f))["ops"]]; print(max(map(len, n)), len(set(n)))' \
  "$T/h-modules.out.json" "$T/h-names.out.json" > "$T/h-names" 2>&1
expect 0 "1017 202" "a name of 100 kB is cut to 1,017 bytes, its digest keeping the 200 apart" -- cat "$T/h-names"
printf '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "ts": 0, "dur": 9}, {"ph": "X", "cat": "cpu_op", "name": "aten::mm\\u0000x", "ts": 1, "dur": 2}]}' > "$T/nul.json"
expect 1 "nul.json: traceEvents[1]: a NUL character (\\u0000) in a string, which no name or text of stowage's may hold" "a NUL escape in an op's name" -- $S import "$T/nul.json" -o "$T/x.json"
expect 2 "--depth" "--depth 0 is a usage error" -- $S import "$T/twopids.json" --depth 0 -o "$T/x.json"
expect 2 "import: --output FILE is required" "no output" -- $S import "$T/twopids.json"
tap_done
