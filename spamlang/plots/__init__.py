"""Figures made from files on disk (`spamlang.results` reads them); nothing here imports the
trainer (or JAX), `sample` or `law`: what a figure needs beyond files, its caller passes in."""
