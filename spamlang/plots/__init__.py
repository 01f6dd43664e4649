"""Figures made from files on disk; nothing here imports the trainer (or JAX).

`runs` reads a sweep directory, `layout` turns its runs into points and the panel grid that
every faceted figure shares, `canvas` draws and saves them.
"""
