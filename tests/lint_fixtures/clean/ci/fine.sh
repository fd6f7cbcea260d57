#!/usr/bin/env bash
# Clean for shellcheck: quoted expansions, globs instead of ls (bench/*.py).
set -eu
for f in ./*.txt; do
	[ -e "$f" ] || continue
	echo "$f ${#f}"
done
