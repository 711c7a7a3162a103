# HAProxy from Debian 12's archive (2.6), the load balancer of compose.yaml.
ARG BASE=debian:12-slim
FROM ${BASE}
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends haproxy \
    && rm -rf /var/lib/apt/lists/*
USER haproxy
EXPOSE 8080 8404
ENTRYPOINT ["/usr/sbin/haproxy", "-W", "-db", "-f", "/etc/haproxy/haproxy.cfg"]
