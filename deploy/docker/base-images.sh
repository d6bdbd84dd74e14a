#!/usr/bin/env bash
# Local stand-ins for the base images the Dockerfile's FROM lines name, for machines that cannot
# pull from an image registry (CI machines here reach Debian's mirror, crates.io and PyPI through
# a proxy, but no registry). `make image` runs this before `docker build`.
#
# For each image a FROM line names: if `docker image inspect` finds it, or `docker pull` gets it,
# nothing is done. Otherwise it is made from Debian's mirror and imported under that name:
#
#   debian:bookworm-slim   mmdebstrap --variant=minbase --include=ca-certificates bookworm,
#                          then `docker import`. Like the official image: the dpkg path-excludes
#                          of its "slim" variant (docs but copyrights, man, info, groff, lintian,
#                          linda, locales but locale.alias; /etc/dpkg/dpkg.cfg.d/docker) and its
#                          apt settings (no .deb or pkgcache left after an install, gzipped lists,
#                          no translations), so image sizes built on it are representative.
#                          (The official one does not carry ca-certificates; this one does, for
#                          the next point.)
#   rust:1-slim-bookworm   the same plus gcc and libc6-dev (what the official image installs) and
#                          the host's Rust toolchain: bin/ and lib/ of `rustc --print sysroot`
#                          (not its 800 MB of docs) under /usr/local/rustup/toolchains, its
#                          commands linked from /usr/local/cargo/bin, RUSTUP_HOME, CARGO_HOME,
#                          RUST_VERSION and PATH as the official image sets them (no rustup).
#
# Both also trust this machine's extra CA certificates (/usr/local/share/ca-certificates/*.crt,
# installed with update-ca-certificates): the registries are reached through a TLS-intercepting
# proxy, and cargo in the build stage fails with "self-signed certificate in certificate chain"
# without them. An image made here is labelled org.browserenv.stand-in=1.
#
# Usage: deploy/docker/base-images.sh [--target STAGE] [DOCKERFILE]
#   DOCKERFILE   default: the repository's Dockerfile
#   --target     only the images of the stages up to STAGE, as `docker build --target STAGE`
#                (Docker's classic builder) builds them: `make image` builds the runtime stage
#                alone, so it needs no Rust image
# Needs: root (mmdebstrap, docker; sudo otherwise), mmdebstrap (installed when missing, with
# scripts/apt-install.sh), and for the Rust image a rustc on PATH. MIRROR overrides
# http://deb.debian.org.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
target=""
if [ "${1:-}" = --target ]; then
  target="$2"
  shift 2
fi
dockerfile="${1:-$here/../../Dockerfile}"
mirror="${MIRROR:-http://deb.debian.org}"
suite=bookworm
extra_cas=/usr/local/share/ca-certificates
docker=(docker)
mmdebstrap=(mmdebstrap)
if [ "$(id -u)" != 0 ]; then
  docker=(sudo docker)
  mmdebstrap=(sudo mmdebstrap)
fi

say() { echo "base-images: $*" >&2; }

# The images FROM lines name (not the build's own stages), up to the --target stage.
mapfile -t images < <(awk -v target="$target" '
  toupper($1) == "FROM" {
    if (done) exit
    image = ""
    for (i = 2; i <= NF; i++) if ($i !~ /^--/) { image = $i; break }
    if (!(image in stages)) print image
    for (i = 2; i < NF; i++) if (toupper($i) == "AS") {
      stages[$(i + 1)] = 1
      if (target != "" && $(i + 1) == target) done = 1
    }
  }' "$dockerfile" | awk '!seen[$0]++')
[ "${#images[@]}" -gt 0 ] || { say "no FROM line${target:+ up to stage $target} in $dockerfile"; exit 1; }

present() {
  "${docker[@]}" image inspect "$1" >/dev/null 2>&1 && return 0
  say "$1 is not here; trying docker pull"
  timeout 600 "${docker[@]}" pull -q "$1" >/dev/null 2>&1
}

work=""
cleanup() { [ -z "$work" ] || rm -rf "$work"; }
trap cleanup EXIT

# mmdebstrap (Debian's; installed when missing) writes a rootfs tarball; arguments: the tarball,
# the packages to add to minbase, then extra mmdebstrap options.
bootstrap() {
  local tarball="$1" include="$2"
  shift 2
  "$here/../../scripts/apt-install.sh" "the base images' stand-ins" mmdebstrap=mmdebstrap >&2
  [ -n "$work" ] || work="$(mktemp -d /var/tmp/base-images.XXXXXX)"
  # The official slim image's apt settings (debuerreotype-minimizing-config).
  cat >"$work/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
  echo 'Acquire::GzipIndexes "true";' >"$work/docker-gzip-indexes"
  echo 'Acquire::Languages "none";' >"$work/docker-no-languages"
  echo 'Apt::AutoRemove::SuggestsImportant "false";' >"$work/docker-autoremove-suggests"
  echo 'force-unsafe-io' >"$work/docker-apt-speedup"
  # The slim variant's path-excludes (debuerreotype's .slimify-excludes / .slimify-includes):
  # --dpkgopt applies them while mmdebstrap installs, and keeps them in the image (99mmdebstrap).
  local keep=()
  for path in doc groff info linda lintian/overrides locale man; do
    keep+=(--dpkgopt="path-exclude=/usr/share/$path/*")
  done
  keep+=(--dpkgopt='path-include=/usr/share/doc/*/copyright'
    --dpkgopt='path-include=/usr/share/locale/locale.alias')
  printf '#!/bin/sh\nexit 101\n' >"$work/policy-rc.d"
  local cas=()
  if compgen -G "$extra_cas/*.crt" >/dev/null; then
    cas=(--customize-hook="mkdir -p \"\$1$extra_cas\""
      --customize-hook="copy-in $(echo "$extra_cas"/*.crt) $extra_cas"
      --customize-hook='chroot "$1" update-ca-certificates')
  fi
  # merged-usr: /usr merged by the hook, as debuerreotype does, not by the usrmerge package (which
  # would bring perl).
  if ! "${mmdebstrap[@]}" --variant=minbase --include="$include" \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    "${keep[@]}" \
    --customize-hook="upload $work/docker-clean /etc/apt/apt.conf.d/docker-clean" \
    --customize-hook="upload $work/docker-gzip-indexes /etc/apt/apt.conf.d/docker-gzip-indexes" \
    --customize-hook="upload $work/docker-no-languages /etc/apt/apt.conf.d/docker-no-languages" \
    --customize-hook="upload $work/docker-autoremove-suggests /etc/apt/apt.conf.d/docker-autoremove-suggests" \
    --customize-hook="upload $work/docker-apt-speedup /etc/dpkg/dpkg.cfg.d/docker-apt-speedup" \
    --customize-hook="upload $work/policy-rc.d /usr/sbin/policy-rc.d" \
    --customize-hook='chmod 0755 "$1/usr/sbin/policy-rc.d"' \
    "${cas[@]}" "$@" \
    --customize-hook='rm -f "$1"/var/cache/apt/*.bin' \
    "$suite" "$tarball" \
    "deb $mirror/debian $suite main" \
    "deb $mirror/debian $suite-updates main" \
    "deb $mirror/debian-security $suite-security main" >"$work/mmdebstrap.log" 2>&1; then
    tail -40 "$work/mmdebstrap.log" >&2
    say "mmdebstrap failed (log above)"
    exit 1
  fi
}

make_debian() {
  local name="$1" tarball
  say "making $name: mmdebstrap --variant=minbase --include=ca-certificates $suite, then docker import"
  [ -n "$work" ] || work="$(mktemp -d /var/tmp/base-images.XXXXXX)"
  tarball="$work/debian.tar"
  bootstrap "$tarball" ca-certificates
  "${docker[@]}" import \
    -c 'CMD ["bash"]' \
    -c 'LABEL org.browserenv.stand-in=1' \
    -m "stand-in for $name made by deploy/docker/base-images.sh (mmdebstrap minbase, no registry)" \
    "$tarball" "$name" >/dev/null
  rm -f "$tarball"
}

make_rust() {
  local name="$1" sysroot version toolchain tarball links
  command -v rustc >/dev/null || { say "no rustc on PATH: cannot make $name"; exit 1; }
  sysroot="$(rustc --print sysroot)"
  version="$(rustc -V | awk '{print $2}')"
  toolchain="$version-$(rustc -vV | awk '/^host:/ {print $2}')"
  say "making $name: as debian:$suite-slim plus gcc, libc6-dev and the host's Rust $version ($sysroot: bin, lib)"
  [ -n "$work" ] || work="$(mktemp -d /var/tmp/base-images.XXXXXX)"
  tarball="$work/rust.tar"
  links="cd \"\$1/usr/local/cargo/bin\" && for tool in ../../rustup/toolchains/$toolchain/bin/*; do ln -s \"\$tool\" .; done"
  bootstrap "$tarball" ca-certificates,gcc,libc6-dev \
    --customize-hook="mkdir -p \"\$1/usr/local/rustup/toolchains/$toolchain\" \"\$1/usr/local/cargo/bin\"" \
    --customize-hook="copy-in $sysroot/bin $sysroot/lib /usr/local/rustup/toolchains/$toolchain" \
    --customize-hook="$links" \
    --customize-hook='chmod -R a+w "$1/usr/local/rustup" "$1/usr/local/cargo"'
  "${docker[@]}" import \
    -c 'ENV RUSTUP_HOME=/usr/local/rustup' \
    -c 'ENV CARGO_HOME=/usr/local/cargo' \
    -c 'ENV PATH=/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    -c "ENV RUST_VERSION=$version" \
    -c 'CMD ["bash"]' \
    -c 'LABEL org.browserenv.stand-in=1' \
    -m "stand-in for $name made by deploy/docker/base-images.sh (mmdebstrap minbase + host Rust $version, no registry)" \
    "$tarball" "$name" >/dev/null
  rm -f "$tarball"
}

for image in "${images[@]}"; do
  if present "$image"; then
    say "$image: present"
    continue
  fi
  case "$image" in
    debian:bookworm-slim) make_debian "$image" ;;
    rust:1-slim-bookworm) make_rust "$image" ;;
    *)
      say "$image cannot be pulled and there is no recipe for a stand-in (only debian:bookworm-slim, rust:1-slim-bookworm)"
      exit 1
      ;;
  esac
  say "$image: made ($("${docker[@]}" image inspect -f '{{.Size}}' "$image" | awk '{printf "%d MB", $1 / 1e6}'))"
done
