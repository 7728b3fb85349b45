#!/usr/bin/env bash
# Session 46: whichever GPU comes: an H200 runs docs/wip/s46-run2.sh, an H100 docs/wip/s46-run3.sh.
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then bash docs/wip/s46-run2.sh; else bash docs/wip/s46-run3.sh; fi
