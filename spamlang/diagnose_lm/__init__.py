"""Hugging Face checkpoints, measured with spamlang's diagnostics (`spamlang diagnose-lm`).

    from spamlang.diagnose_lm import diagnose_lm
    diag = diagnose_lm("checkpoints/pythia-160m", tokens_NxL)  # torch runs it, JAX measures

torch, transformers and safetensors are the optional `hf` extra (`require()` says so).
"""

from __future__ import annotations

import os

# torch's OpenMP threads spin-wait between parallel regions by default, and here the JAX
# stage runs right after torch in the same process. On the 2-core development machine the
# QR of a 49,152 x 576 head after a torch matmul took 4.5 s against 1.5 s with passive
# waiting while another process was busy; on a quiet machine the whole SmolLM2-shape
# diagnose-lm took 58.7 s against 52.3 s (benchmarks/bench_diagnose_lm.py). It must be in
# the environment before torch loads OpenMP, so it is set here, before `require` imports
# torch; a user's own setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# Below the environment setting, which must precede torch's import (`require` imports it).
from spamlang.diagnose_lm.diagnose import diagnose_lm  # noqa: E402
from spamlang.diagnose_lm.states import INSTALL_HINT, require  # noqa: E402

__all__ = ["INSTALL_HINT", "diagnose_lm", "require"]
