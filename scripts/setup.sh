#!/usr/bin/env bash
# One-time set-up on a fresh machine: a virtual environment with tsg-envs and every extra.
#
# torch is installed first and alone, as torch==2.13.0 (every other torch requirement is a range
# that 2.13.0 satisfies, so nothing later replaces it):
#   * from PyTorch's CPU-only wheel index when a short probe (5 s) finds it reachable, so a Linux
#     machine does not pull the CUDA build and its ~2 GB of nvidia-* wheels;
#   * else from the default index (pip's configuration decides; on an offline mirror or a machine
#     that ships the wheel, that is where it comes from).
# GPU users: TSG_TORCH_INDEX=default bash scripts/setup.sh (the default index: CUDA builds on
# Linux), or TSG_TORCH_INDEX=<index URL> for another wheel index.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
CPU_INDEX="https://download.pytorch.org/whl/cpu"
[ -d .venv ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip

install_torch() {
  local choice=${TSG_TORCH_INDEX:-cpu}
  if python -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '2.13.0')" \
      2>/dev/null; then
    return 0  # already there
  fi
  if [ "$choice" = "cpu" ]; then
    if python - "$CPU_INDEX" <<'PROBE'
import sys, urllib.request
try:
    urllib.request.urlopen(sys.argv[1] + "/torch/", timeout=5).close()
except Exception:
    sys.exit(1)
PROBE
    then
      echo "setup: torch 2.13.0 from PyTorch's CPU-only index"
      python -m pip install -q --index-url "$CPU_INDEX" "torch==2.13.0" && return 0
      echo "setup: the CPU-only index failed; falling back to the default index"
    else
      echo "setup: PyTorch's CPU-only index is not reachable; torch from the default index"
    fi
    python -m pip install -q "torch==2.13.0"
  elif [ "$choice" = "default" ]; then
    python -m pip install -q "torch==2.13.0"
  else
    python -m pip install -q --index-url "$choice" "torch==2.13.0"
  fi
}

install_torch
python -m pip install -q -e ".[all]"
