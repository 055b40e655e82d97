# aclvmm as a CANN-like toolkit on Debian, for CI jobs that `FROM` it (docs/install.md, "Docker").
#
#   docker build -t aclvmm .
#   docker run --rm aclvmm python3 -c 'import acl; print(acl.init(), acl.rt.get_device_count())'
#
# The root is /usr/local/Ascend/ascend-toolkit/<version> with the `latest` link, as CANN installs
# it, and <toolkit>/set_env.sh leads to the root's. Every process sees the environment that
# set_env.sh gives (the ENV lines, which tests/install compares with set_env.sh's output), and
# every shell sources set_env.sh as well (login shells by /etc/profile.d, interactive bash by
# /etc/bash.bashrc, non-interactive bash by BASH_ENV), so a job that switches roots gets the
# usual behaviour. Debian packages only; the emulated NPU needs no device.
FROM debian:bookworm

# Build tools for aclvmm and for the job's own C/C++ code; Python with pytest for the binding and
# the npu_emulator fixture; libfabric for FABRIC sharing across hosts (docs/fabric.md).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      cmake g++ make binutils pkg-config libspdlog-dev libnuma-dev \
      python3-dev python3-pytest python3-venv libfabric-dev iproute2 \
 && rm -rf /var/lib/apt/lists/*

ARG ACLVMM_VERSION=0.1.0
COPY . /usr/src/aclvmm
RUN cmake -S /usr/src/aclvmm -B /tmp/aclvmm-build -DCMAKE_BUILD_TYPE=Release \
      -DACLVMM_BUILD_TESTS=OFF -DACLVMM_BUILD_EXAMPLES=OFF -DACLVMM_BUILD_BENCH=OFF \
 && cmake --build /tmp/aclvmm-build -j"$(nproc)" \
 && cmake --install /tmp/aclvmm-build --prefix /usr/local/Ascend/ascend-toolkit/${ACLVMM_VERSION} \
 && ln -s ${ACLVMM_VERSION} /usr/local/Ascend/ascend-toolkit/latest \
 && printf '%s\n' '. /usr/local/Ascend/ascend-toolkit/latest/set_env.sh' \
      > /usr/local/Ascend/ascend-toolkit/set_env.sh \
 && cp /usr/local/Ascend/ascend-toolkit/set_env.sh /etc/profile.d/ascend-toolkit.sh \
 && cat /etc/profile.d/ascend-toolkit.sh >> /etc/bash.bashrc \
 && rm -rf /tmp/aclvmm-build

ENV BASH_ENV=/etc/profile.d/ascend-toolkit.sh
ENV ASCEND_HOME_PATH=/usr/local/Ascend/ascend-toolkit/latest
ENV ASCEND_TOOLKIT_HOME=/usr/local/Ascend/ascend-toolkit/latest
ENV ASCEND_AICPU_PATH=/usr/local/Ascend/ascend-toolkit/latest
ENV ASCEND_OPP_PATH=/usr/local/Ascend/ascend-toolkit/latest/opp
ENV TOOLCHAIN_HOME=/usr/local/Ascend/ascend-toolkit/latest/toolkit
ENV PATH=/usr/local/Ascend/ascend-toolkit/latest/bin:$PATH
ENV LD_LIBRARY_PATH=/usr/local/Ascend/ascend-toolkit/latest/lib64
ENV PYTHONPATH=/usr/local/Ascend/ascend-toolkit/latest/python/site-packages
ENV CMAKE_PREFIX_PATH=/usr/local/Ascend/ascend-toolkit/latest/lib64/cmake
ENV PKG_CONFIG_PATH=/usr/local/Ascend/ascend-toolkit/latest/lib64/pkgconfig
