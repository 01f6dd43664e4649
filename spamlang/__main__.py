import sys

from spamlang.cli import main

sys.exit(main())
