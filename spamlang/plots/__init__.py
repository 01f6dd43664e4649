"""Figures made from files on disk; nothing here imports the trainer.

- `spamlang.plots.sweep`: `plot_heatmap` (a final metric on an x by y grid, default V by LR, one
  panel per tying setting, best LR outlined; the paper's Figure 5), and the other sweep figures
  re-exported from:
  - `spamlang.plots.curves`: `plot_curves` (a metrics.jsonl value against tokens, one line per V,
    each at its cell's best LR unless one LR is given; Figure 4);
  - `spamlang.plots.lines`: `plot_lines` (an outcome against a numeric column, one line per
    value of another, each point at its best LR; the coverage figure).
  `plot_heatmap(..., best_over="lr")` draws each cell at its best LR instead (the phase
  diagram of return time against Adam's memory).
  `plot_heatmap` draws the diagonal memory = return time (`spamlang.plots.diagonal`) on the
  phase diagram, and names each cell's head kind where the cells mix them.
- `spamlang.plots.recency`: `plot_recency`, each symbol's final loss against the steps since
  it was last shown (symbols.npz), with Adam's memory marked.
- `spamlang.plots.panels`: the panel loop the faceted figures share.
- `spamlang.plots.layout`: how runs become points (seed means with min-max ranges, best LR) and
  panels; any results.csv column can be an axis.
- `spamlang.plots.runs`: reading a sweep directory (results.csv, run directories, metrics.jsonl).
- `spamlang.plots.canvas`: figure width, colours, atomic PNG/PDF saving, and tick labels that
  name the data's values (V = 64, 1024) and never crowd a log axis.
- `spamlang.plots.track`: `plot_track`, the mechanism diagnostic: each step's update to a few
  tracked symbols' rows along themselves (track.jsonl), with the symbol's appearances marked.
- `spamlang.plots.samples`: `plot_samples`, the sample table of `spamlang.sample` (Table 1) as a figure.
- `spamlang.plots.diagnostics`: gradient-bottleneck figures: one diagnostics.json's rank curve,
  coefficient profile and efficiency (Figures 2, 7, 8), and `plot_bottleneck` (Figure 6), whose
  points `spamlang.plots.bottleneck_inputs` reads from sweeps and `diagnose-lm` outputs.

Every figure is drawn on a bare matplotlib `Figure` (no pyplot state) and saved as PNG or PDF
according to the output file's extension.
"""
