# rigfit as a container: the daemon that tells which LLMs fit the machine it runs on.
#
#   docker build -t rigfit .
#   docker run -d --gpus all -p 127.0.0.1:8080:8080 -v rigfit-data:/var/lib/rigfit rigfit
#
# GPUs are seen through the NVIDIA container runtime (--gpus / nvidia-container-toolkit), which
# mounts libnvidia-ml.so and nvidia-smi into the container; rigfit loads NVML with dlopen, so
# the image carries no NVIDIA library and runs unchanged on machines without a GPU.

# ---- build: compilers and -dev packages, thrown away after the binary is built ----
FROM debian:bookworm-slim AS build
# libc6-dev is named because gcc only recommends it and recommends are not installed.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      gcc libc6-dev make pkg-config \
      libmicrohttpd-dev libcjson-dev libuv1-dev libsqlite3-dev libcurl4-openssl-dev libyaml-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Exactly what `make build/rigfit` reads: the sources, the spec and migrations it embeds, the
# script that embeds them, and the version. tests/server/test_packaging.c dry-runs the build
# on a copy of just these, so a new build input missing here fails the unit tests first.
COPY Makefile VERSION openapi.yaml ./
COPY tests/tools/gen_embed.sh tests/tools/
COPY core core
COPY api api
COPY server server
COPY migrations migrations
# The Makefile's default goal (`make` builds the same file).
RUN make -j"$(nproc)" build/rigfit

# ---- runtime: the binary, its shared libraries, the profiles ----
FROM debian:bookworm-slim
# Only the sonames build/rigfit links against (readelf -d), libcurl, which it loads for --hub,
# and the CA certificates libcurl verifies a --hub's TLS with; no curl or wget: the HEALTHCHECK
# below is the rigfit binary.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libmicrohttpd12 libcjson1 libuv1 libsqlite3-0 libcurl4 ca-certificates libyaml-0-2 \
 && rm -rf /var/lib/apt/lists/*
# A fixed numeric uid, so that `USER` below can name it by number: Kubernetes' runAsNonRoot can
# only verify a numeric user, and volume ownership stays stable across image rebuilds.
RUN groupadd --system --gid 10001 rigfit \
 && useradd --system --uid 10001 --gid rigfit --home-dir /var/lib/rigfit --no-create-home \
      --shell /usr/sbin/nologin rigfit \
 && install -d -o rigfit -g rigfit -m 0750 /var/lib/rigfit
COPY --from=build /src/build/rigfit /usr/local/bin/rigfit
# Profiles are data read at start and on SIGHUP; copied from the context, not the build
# stage, so editing a profile does not invalidate the compiled layer.
COPY profiles /usr/local/share/rigfit/profiles

# utility: NVML and nvidia-smi only (rigfit reads the GPU, it does not compute on it), which
# keeps the CUDA and graphics libraries out of the container.
ENV NVIDIA_DRIVER_CAPABILITIES=utility \
    NVIDIA_VISIBLE_DEVICES=all \
    RIGFIT_LISTEN=0.0.0.0:8080 \
    RIGFIT_DB=/var/lib/rigfit/rigfit.db \
    RIGFIT_PROFILES=/usr/local/share/rigfit/profiles
# Declared after the directory is created and chowned, so a fresh named volume starts out
# owned by rigfit and the database survives container upgrades.
VOLUME /var/lib/rigfit
USER 10001:10001
EXPOSE 8080
# Readiness, GET /readyz over loopback inside the container (exits 0 on 200, 1 otherwise):
# Docker keeps one health check per container, and what reads it (compose's
# `condition: service_healthy`, swarm's routing) wants to know whether the daemon can answer,
# so a container whose store is down or whose first scan has not finished is not healthy.
# Docker never restarts an unhealthy container itself, so this cannot cause a restart loop;
# liveness (GET /healthz, `rigfit healthcheck` without --ready) is for orchestrators that
# have a separate liveness probe, as in systemd/rigfit-daemonset.yaml.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["rigfit", "healthcheck", "--ready", "--listen", "127.0.0.1:8080"]
ENTRYPOINT ["rigfit"]
# --insecure: inside the container rigfit must listen on 0.0.0.0 to be reachable at all, and
# the daemon refuses a non-loopback address without a token unless told otherwise. The network
# namespace is the boundary here: publish the port on loopback (-p 127.0.0.1:8080:8080) or to
# a private network only. To expose it further, mount a token and run
# `serve --token-file /run/secrets/rigfit-token` instead (without --insecure).
CMD ["serve", "--insecure"]
