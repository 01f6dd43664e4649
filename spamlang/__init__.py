"""spamlang: the LM-head gradient bottleneck, reproduced on trivially learnable languages.

See README.md and ../shared/DESIGN.md for the map of the package.
"""

__version__ = "0.1.0"
