"""The remedy on real text: the head's own b2 0.999 (AdamW b2 0.95 elsewhere), Figure 1's full head.

The base of `head_rank_text.py`; 2 seeds, LRs 3e-3, 1e-2, 3e-2 (every text arm's best so far was
1e-2) bracketed by up to 2 more; compared with text_memory's arms by `docs/analysis/text_results.py`.
Findings: docs/findings.md, "Real text"; forecast: results/forecasts/text_remedy.md.

Run: python sweeps/text_remedy.py [--out DIR] [--dry-run]
"""

import dataclasses
from pathlib import Path

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import load_sweep_file

FIGURE_1 = load_sweep_file(Path(__file__).with_name("head_rank_text.py"))[0]

SWEEP = dataclasses.replace(
    FIGURE_1,
    name="text_remedy",
    axes={"head_b2": [0.999], "lr": [3e-3, 1e-2, 3e-2], "seed": [0, 1]},
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
