#!/usr/bin/env bash
# deps.sh — install the Debian packages in ci/packages.txt (make deps).
# Idempotent and fast when everything is present: dpkg is asked first, and
# apt-get (update once, then install) runs only for what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t pkgs < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' ci/packages.txt)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "deps: all ${#pkgs[@]} packages present"
	exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
	sudo=sudo
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "deps: done"
