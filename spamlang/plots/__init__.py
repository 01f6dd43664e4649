"""Figures made from files on disk; nothing here imports the trainer (or JAX).

`spamlang.rundir.runs` reads a sweep directory, `layout` turns its runs into points and the
panel grid that every faceted figure shares, `canvas` draws and saves them. What a figure
needs beyond files (samples drawn from a model, a law's predictions) its caller computes and
passes in: plots import neither `sample` nor `law`.
"""
