"""spamlang: the LM-head gradient bottleneck, reproduced on trivially learnable languages.

See README.md for the map of the package; the module docstrings hold its contracts.
"""

__version__ = "0.1.0"
