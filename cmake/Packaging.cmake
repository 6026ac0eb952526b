# Debian packages of the command line and the server (CPack DEB), built by `scripts/package deb`
# (docs/install.md). Two packages from one build tree:
#
#   axqc         /usr/bin/axqc and /usr/bin/axqc-worker (the sandboxed worker of
#                `axqc check --isolate`, found next to axqc)
#   axqc-server  /usr/bin/axqc-server, its systemd unit, /etc/axqc/server.conf (a conffile),
#                /usr/share/axqc/proto/axqc/v1/axqc.proto, and maintainer scripts that create the
#                system user `axqc` and its state directory /var/lib/axqc. Depends on axqc of the
#                same version (the worker and `axqc health`).
#
# Runtime dependencies come from dpkg-shlibdeps (package dpkg-dev) over the installed binaries:
# Debian's libgrpc++1.51, libprotobuf32, libgvc6, ... (ONNX is linked statically, so nothing
# refers to the ONNX prefix under /opt/axqc-deps). The packages are for the Debian release they
# are built on (Debian 12 bookworm here).
#
# The install() rules of the unit and the config file are EXCLUDE_FROM_ALL: a plain
# `cmake --install` (the container image, a developer's prefix) does not write to /etc or
# /lib/systemd; CPack installs each component explicitly and gets them.

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME axqc)
set(CPACK_PACKAGE_VENDOR "axqc")
set(CPACK_PACKAGE_CONTACT "axqc maintainers <maintainers@users.noreply.a-seed-34d50b40.example>")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_DIRECTORY "${PROJECT_BINARY_DIR}/packages")
set(CPACK_OUTPUT_FILE_PREFIX "")

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL cli)
if(AXQC_BUILD_SERVER)
  list(APPEND CPACK_COMPONENTS_ALL server)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)          # <name>_<version>-<release>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(_axqc_deb_version "${CPACK_PACKAGE_VERSION}-${CPACK_DEBIAN_PACKAGE_RELEASE}")

set(CPACK_DEBIAN_CLI_PACKAGE_NAME axqc)
set(CPACK_COMPONENT_CLI_DESCRIPTION
  "Conformance checker for quantized ONNX (QDQ) models: command line
axqc checks quantized ONNX models in QDQ form (QuantizeLinear/DequantizeLinear)
against the ax quant spec for Axera NPUs, locally or through axqc-server, and
reports which node breaks which rule (text, JSON, JUnit, SARIF, GitHub, GitLab,
HTML). The exit code is the verdict, for CI gates.")
# Remote checks over TLS to servers with public certificates.
set(CPACK_DEBIAN_CLI_PACKAGE_RECOMMENDS "ca-certificates")

set(CPACK_DEBIAN_SERVER_PACKAGE_NAME axqc-server)
set(CPACK_COMPONENT_SERVER_DESCRIPTION
  "Conformance checker for quantized ONNX (QDQ) models: validation service
axqc-server checks quantized ONNX models for clients over gRPC and HTTP/JSON
(axqc check --server, the Python client, registry webhooks), keeps reports in
SQLite or PostgreSQL and serves Prometheus metrics. Runs as the systemd service
axqc-server.service under the system user axqc; configuration in
/etc/axqc/server.conf.")
set(CPACK_DEBIAN_SERVER_PACKAGE_DEPENDS "axqc (= ${_axqc_deb_version}), adduser")
set(CPACK_DEBIAN_SERVER_PACKAGE_RECOMMENDS "ca-certificates")
set(_axqc_deb_dir "${PROJECT_SOURCE_DIR}/deploy/debian")
# Maintainer scripts and conffiles (CPack keeps the file names: the directory holds them under
# their Debian names).
set(CPACK_DEBIAN_SERVER_PACKAGE_CONTROL_EXTRA
  "${_axqc_deb_dir}/axqc-server/conffiles;${_axqc_deb_dir}/axqc-server/postinst;${_axqc_deb_dir}/axqc-server/prerm;${_axqc_deb_dir}/axqc-server/postrm")

if(AXQC_BUILD_SERVER)
  install(FILES "${_axqc_deb_dir}/axqc-server.service" DESTINATION /lib/systemd/system
    COMPONENT server EXCLUDE_FROM_ALL)
  install(FILES "${_axqc_deb_dir}/server.conf" DESTINATION /etc/axqc
    COMPONENT server EXCLUDE_FROM_ALL)
endif()

include(CPack)
