#!/usr/bin/env bash
# One-time set-up on a fresh machine: a virtual environment with tsg-envs and every extra.
# torch is installed first, explicitly, as the CPU build 2.13.0 (a range that 2.13.0 satisfies
# everywhere else), so pip never pulls a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -d .venv ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q "torch==2.13.0"
python -m pip install -q -e ".[all]"
