# Finds every Debian package cebridge builds against, and stops with the
# package name to install when one is missing (instead of a compiler error).
find_package(Threads REQUIRED)
find_package(PkgConfig)
if(NOT PKG_CONFIG_FOUND)
  message(FATAL_ERROR "cebridge needs pkg-config: apt-get install pkg-config")
endif()

set(CEB_MISSING_DEBS "")
macro(ceb_dep var module deb)
  pkg_check_modules(${var} QUIET IMPORTED_TARGET ${module})
  if(NOT ${var}_FOUND)
    list(APPEND CEB_MISSING_DEBS ${deb})
  endif()
endmacro()

ceb_dep(JANSSON jansson libjansson-dev)
ceb_dep(SQLITE3 sqlite3 libsqlite3-dev)
ceb_dep(INIH inih libinih-dev)
ceb_dep(MHD libmicrohttpd libmicrohttpd-dev)
# libmicrohttpd's TLS library: the listeners (intermediary, pull, admin API)
# check their TLS priority string with it and read client certificates.
ceb_dep(GNUTLS gnutls libgnutls28-dev)
ceb_dep(PCRE2 libpcre2-8 libpcre2-dev)
ceb_dep(YAML yaml-0.1 libyaml-dev)
ceb_dep(CURL libcurl libcurl4-openssl-dev)
ceb_dep(CRYPTO libcrypto libssl-dev)
ceb_dep(SSL libssl libssl-dev)
if(CEB_WITH_HTTP)
  ceb_dep(JWT libjwt libjwt-dev)
endif()
if(CEB_WITH_SYSTEMD)
  ceb_dep(SYSTEMD libsystemd libsystemd-dev)
endif()
if(CEB_WITH_KAFKA)
  ceb_dep(RDKAFKA rdkafka librdkafka-dev)
endif()
if(CEB_WITH_MQTT)
  ceb_dep(MOSQUITTO libmosquitto libmosquitto-dev)
endif()

if(CEB_MISSING_DEBS)
  list(REMOVE_DUPLICATES CEB_MISSING_DEBS)
  string(REPLACE ";" " " _debs "${CEB_MISSING_DEBS}")
  message(FATAL_ERROR
    "cebridge: missing build dependencies.\n"
    "On Debian 12 install them with:\n  apt-get install ${_debs}\n"
    "(contrib/dev/deps.sh installs everything the build and tests need.)")
endif()
