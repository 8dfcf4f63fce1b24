"""`python -m glmbench` runs the same command as the `glmbench` console script."""
import sys

from glmbench.cli import main

sys.exit(main())
