#!/bin/sh
# The Makefile's install steps (and deploy/docker/base-images.sh's): installs, with Debian's
# apt-get, the package of each tool that is missing, and nothing when none is.
#
# Usage: scripts/apt-install.sh WHAT [--no-install-recommends] TOOL=PACKAGE... [PACKAGE...]
#
#   WHAT            what the tools are for, for the messages ("the terminal tests")
#   TOOL=PACKAGE    PACKAGE is installed when TOOL is missing. TOOL is a command, looked up on
#                   $TOOL_PATH (default: $PATH and the sbin folders a user's PATH may lack, where
#                   Debian puts dockerd and haproxy), or a file (a path with a slash) that must exist
#   PACKAGE         installed in any case (the caller has checked what it needs itself)
#
# apt-get runs with sudo when not root ($SUDO overrides: the Makefile passes its own). When it
# fails, the command to run by hand is printed and the exit status is 1.
# tests/python/test_install.py runs every install step with the tool hidden from PATH and a
# stand-in apt-get.
set -eu

what=$1
shift
search=${TOOL_PATH:-$PATH:/usr/local/sbin:/usr/sbin:/sbin}
if [ -z "${SUDO+set}" ]; then
  SUDO=
  [ "$(id -u)" = 0 ] || SUDO=sudo
fi

options=""
missing=""
for entry in "$@"; do
  case $entry in
    -*) options="$options $entry"; continue ;;
    *=*) tool=${entry%%=*} package=${entry#*=} ;;
    *) tool="" package=$entry ;;
  esac
  case $tool in
    "") ;;
    */*) [ -e "$tool" ] && continue ;;
    *) (PATH=$search; command -v "$tool" >/dev/null 2>&1) && continue ;;
  esac
  case " $missing " in
    *" $package "*) ;;
    *) missing="$missing $package" ;;
  esac
done
[ -n "$missing" ] || exit 0

echo "Missing for $what: installing Debian's$missing"
# Waiting up to 5 minutes for a lock another apt holds (a new machine's unattended-upgrades, or
# another install step of the same `make test`).
lock="-o DPkg::Lock::Timeout=300"
# shellcheck disable=SC2086 # the options and packages are words
if ! { $SUDO apt-get $lock update -qq &&
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get $lock install -y -qq $options $missing; }; then
  echo "Could not install them. Run: sudo apt-get install$options$missing"
  exit 1
fi
