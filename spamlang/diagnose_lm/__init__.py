"""Hugging Face checkpoints, measured with spamlang's diagnostics (`spamlang diagnose-lm`).

    from spamlang.diagnose_lm import diagnose_lm
    diag = diagnose_lm("checkpoints/pythia-160m", tokens_NxL)  # torch runs it, JAX measures

torch, transformers and safetensors are the optional `hf` extra (`require()` says so).
"""

from __future__ import annotations

import os

# torch's spin-waiting OpenMP threads slow the JAX stage after it; set before torch loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from spamlang.diagnose_lm.diagnose import diagnose_lm  # noqa: E402
from spamlang.diagnose_lm.states import INSTALL_HINT, require  # noqa: E402

__all__ = ["INSTALL_HINT", "diagnose_lm", "require"]
