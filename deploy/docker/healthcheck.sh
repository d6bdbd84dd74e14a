#!/bin/bash
# The image's HEALTHCHECK: GET /health on the server's port, with bash alone (curl and its
# libraries would be the only users of libcurl, LDAP, Kerberos... in the image). Healthy when the
# answer's status is 200. BROWSER_HOST 0.0.0.0, :: or unset is asked on loopback.
# (Under SBX_PROXY_DIR the server listens on a Unix socket only: this check then fails, as curl's
# did.)
set -u
host="${BROWSER_HOST:-127.0.0.1}"
case "$host" in
  0.0.0.0 | "") host=127.0.0.1 ;;
  :: | "[::]") host=::1 ;;
esac
host="${host#[}"
host="${host%]}"
port="${SBX_SERVICE_PORT:-8000}"
exec 3<>"/dev/tcp/$host/$port" || exit 1
case "$host" in
  *:*) authority="[$host]:$port" ;;
  *) authority="$host:$port" ;;
esac
printf 'GET /health HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' "$authority" >&3
IFS= read -r -t 5 status <&3 || exit 1
case "$status" in
  "HTTP/1."[01]" 200"*) exit 0 ;;
  *) echo "health: ${status%$'\r'}" >&2; exit 1 ;;
esac
