"""Gradient-bottleneck diagnostics: how much of the logit gradient the LM head destroys.

The paper's section 2.3 and 3.3-3.4 measurements, for any run and any head:

- `logit_gradient`, `kernel_fraction` (equation 10), `projected_cosine`, their per-token
  Jacobian versions for nonlinear heads, accumulated over token chunks with `BottleneckStats`;
- `empirical_rank`, `rank_curve` (Figure 2);
- `update_efficiency` (Figure 8), `coefficient_profile` (Figure 7);
- `diagnose_model`: all of the above on a Transformer and a batch of tokens, chunked so that
  V = 131,072 fits in a few GiB; `diagnose_head`: the same from hidden states and a head
  matrix of any model (`spamlang diagnose-lm` feeds it Hugging Face checkpoints);
- `diag_metrics`: the cheap jittable subset the trainer logs every `diag_every` steps.
"""

# The package's public names, re-exported.
from spamlang.diagnostics.driver import diagnose_head, diagnose_model  # noqa: F401
from spamlang.diagnostics.linalg import (  # noqa: F401
    HEAD_RTOL,
    BottleneckStats,
    bottleneck_stats,
    empirical_rank,
    head_basis,
    jacobian_stats,
    kernel_fraction,
    kernel_fraction_jacobian,
    project,
    projected_cosine,
    projected_cosine_jacobian,
    rank_curve,
    row_terms,
    total,
)
from spamlang.diagnostics.logits import (  # noqa: F401
    coefficient_profile,
    cross_entropy_sum,
    induced_direction,
    logit_gradient,
    update_efficiency,
)
from spamlang.diagnostics.training import diag_metrics  # noqa: F401
