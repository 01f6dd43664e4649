"""Gradient-bottleneck diagnostics: how much of the logit gradient the LM head destroys (the
paper's sections 2.3 and 3.3-3.4; the notation is in `linalg`). `diagnose_model` and
`diagnose_head` measure everything on a Transformer, or on the hidden states and head matrix of
any model (`driver`); `diag_metrics` is the cheap subset the trainer logs (`training`).
"""

from spamlang.diagnostics.driver import diagnose_head, diagnose_model  # noqa: F401
from spamlang.diagnostics.linalg import (  # noqa: F401
    BottleneckStats,
    bottleneck_stats,
    empirical_rank,
    head_basis,
    kernel_fraction,
    project,
    projected_cosine,
    rank_curve,
)
from spamlang.diagnostics.logits import (  # noqa: F401
    coefficient_profile,
    cross_entropy_sum,
    logit_gradient,
    update_efficiency,
)
from spamlang.diagnostics.training import diag_metrics  # noqa: F401
