"""Figures made from files on disk; nothing here imports the trainer.

- `spamlang.plots.sweep`: `plot_heatmap` (final loss on a V x LR grid, one panel per tying
  setting; the paper's Figure 5) and `plot_curves` (loss against tokens, one line per V; Figure 4).
- `spamlang.plots.results`: reading a sweep directory (results.csv, run directories, metrics.jsonl).
- `spamlang.plots.samples`: `plot_samples`, the sample table of `spamlang.sample` (Table 1) as a figure.
- `spamlang.plots.diagnostics`: gradient-bottleneck figures (`plot_bottleneck`).

Every figure is drawn on a bare matplotlib `Figure` (no pyplot state) and saved as PNG or PDF
according to the output file's extension.
"""
