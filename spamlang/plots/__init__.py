"""Figures made from files on disk; nothing here imports the trainer (or JAX).

`layout` turns runs into points (seed means, best LR) and the panel grid every faceted figure
(`sweep`'s heatmap, `curves`, `lines`, `symbols`' two) shares; `runs` reads a sweep
directory; `canvas` saves figures atomically as PNG or PDF, chosen by the output's extension.
Every figure is drawn on a bare matplotlib `Figure` (no pyplot state).
"""
