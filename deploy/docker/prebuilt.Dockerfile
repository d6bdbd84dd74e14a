# `make image`: the Dockerfile's runtime stage (built with `docker build --target runtime`) and the
# server built on the host (`cargo build --release -p browserenv-server`, stripped), in place of
# the Dockerfile's build stage, which compiles the same server inside Docker. The build context is
# target/image, which holds only the binary.
#
# The host is Debian bookworm like the image's base, so the binary links the same glibc; the RUN
# below checks that, and that it starts, so that a binary from another system (a newer glibc)
# fails here, and `make image` builds the whole Dockerfile instead.
ARG RUNTIME=browserenv-runtime:latest
FROM ${RUNTIME}
COPY browserenv-server /usr/local/bin/browserenv-server
RUN if ldd /usr/local/bin/browserenv-server | grep 'not found'; then exit 1; fi \
 && browserenv-server --version
