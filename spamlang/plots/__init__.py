"""Figures made from files on disk (`spamlang.results` reads them); nothing here imports the
trainer (or JAX). `layout` turns runs into points and the panel grid every faceted figure shares,
`canvas` draws and saves; what a figure needs beyond files (samples, a law's predictions) its
caller passes in: plots import neither `sample` nor `law`.
"""
