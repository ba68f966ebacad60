"""`python -m ndtune._worker __worker|__builder`: how a campaign started from Python runs its
measurement and build workers (the loops of `ndtune __worker` and `ndtune __builder`)."""

import sys

from ndtune import _ndtune

if __name__ == "__main__":
    sys.exit(_ndtune.serve(sys.argv[1] if len(sys.argv) > 1 else ""))
