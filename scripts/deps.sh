#!/bin/sh
# Install the Debian packages xdpr needs that are not installed yet.
set -eu
cd "$(dirname "$0")/.."
missing=
for p in $(grep -v '^#' scripts/packages.txt); do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "Error: missing packages:$missing (run as root, or install them)" >&2
	exit 1
fi
echo "installing:$missing"
apt-get update -q
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
