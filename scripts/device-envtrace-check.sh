#!/usr/bin/env bash
# Device check: does the environment-read tracer see reads from a real CUDA/NCCL/PyTorch stack?
set -u
echo "== machine"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -2
head -2 /etc/os-release; ldd --version 2>&1 | head -1; python3 --version 2>&1
echo "== python packages"
for m in torch vllm sglang tensorrt_llm; do python3 -c "import $m; print('$m', $m.__version__)" 2>&1 | tail -1; done
echo "== build tracer"
if command -v gcc >/dev/null; then gcc -shared -fPIC -O2 -o "$OUT/libib_envtrace.so" src/verify/envtrace/ib_envtrace.c -ldl && echo built; else echo "no gcc"; fi
lib="$OUT/libib_envtrace.so"
[ -f "$lib" ] || { echo "no tracer library"; exit 0; }
watch=CUDA_VISIBLE_DEVICES,CUDA_LAUNCH_BLOCKING,CUDA_MODULE_LOADING,PYTORCH_CUDA_ALLOC_CONF,NCCL_DEBUG,NCCL_P2P_DISABLE,TORCH_NCCL_ASYNC_ERROR_HANDLING,TORCH_SHOW_CPP_STACKTRACES,IB_NEVER_READ
run() {  # name, python code
  d="$OUT/trace-$1"; mkdir -p "$d"
  echo "== $1"
  ( export LD_PRELOAD="$lib" PYTHONPATH="$PWD/src/verify/envtrace" IB_ENVTRACE_DIR="$d" IB_ENVTRACE_WATCH="$watch" \
      PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True NCCL_DEBUG=WARN CUDA_LAUNCH_BLOCKING=0 IB_NEVER_READ=1
    timeout 120 python3 -c "$2" ) 2>&1 | tail -5
  ls "$d"
  cat "$d"/*.jsonl 2>/dev/null | python3 -c '
import json,sys
seen={}
for line in sys.stdin:
    try: r=json.loads(line)
    except Exception: continue
    seen.setdefault(r["variable"], set()).add("%s:%s" % (r["exe"].rsplit("/",1)[-1], r["function"]))
for v in sorted(seen): print("  %-32s %s" % (v, ", ".join(sorted(seen[v]))))
print("  never read:", sorted(set("'"$watch"'".split(",")) - set(seen)))
'
}
if python3 -c "import torch" 2>/dev/null; then
  run torch-cuda "import torch; x = torch.ones(1024, device='cuda'); print('sum', (x*2).sum().item())"
  run torch-nccl "
import os, torch, torch.distributed as dist
os.environ.setdefault('MASTER_ADDR','127.0.0.1'); os.environ.setdefault('MASTER_PORT','29555')
dist.init_process_group('nccl', rank=0, world_size=1)
t = torch.ones(4, device='cuda'); dist.all_reduce(t); print('allreduce', t.tolist()); dist.destroy_process_group()"
else
  echo "no torch: nothing more to check"
fi
