#!/bin/sh
# bench/published.sh [BUILDDIR] [DATA] — stowage's predictions against what other people measured
# for offloaded training (../shared/data/published/): bench/published.py does the work (every
# usable row replayed with the policy it names, predicted against published, per row and per
# system, with the mean absolute error; the rows no policy represents, with the reason). It needs
# only the stowage CLI and Python 3's standard library. Its last result: bench/results/published.md.
exec python3 "$(dirname "$0")/published.py" "$@"
