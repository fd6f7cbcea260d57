#!/bin/sh
# Broken on purpose for the shellcheck rule: iterating over ls (SC2045).
for f in $(ls ./*.txt); do
	echo "$f"
done
