#!/usr/bin/env bash
# Build the collection tarball, install it into a temporary directory and
# render the documentation of every plugin and role from that installed copy,
# as a user of the published collection would get it.
set -euo pipefail

# shellcheck source=tests/tooling/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

require_venv
banner "build: ansible-galaxy collection build + install + ansible-doc"
stage="$(stage_collection)"
dist_dir="${BUILD_DIR}/dist"
rm -rf "${dist_dir}"
mkdir -p "${dist_dir}"

# Building from the staged copy keeps local, git-ignored files out of the tarball.
ansible-galaxy collection build "${stage}" --output-path "${dist_dir}"
tarballs=("${dist_dir}"/*.tar.gz)
[[ ${#tarballs[@]} -eq 1 && -f "${tarballs[0]}" ]] || die "expected one tarball in ${dist_dir}, found: ${tarballs[*]}"

install_dir="$(mktemp -d -t azure-maintenance-install-XXXXXX)"
trap 'rm -rf "${install_dir}"' EXIT
ANSIBLE_COLLECTIONS_PATH="${install_dir}" ansible-galaxy collection install --offline -p "${install_dir}" "${tarballs[0]}"

# Run from the temporary directory so neither the checkout nor the staged copy
# can be picked up instead of the installed collection.
cd "${install_dir}"
"${VENV_PYTHON}" "${TOOLING_DIR}/check_installed_docs.py" "${install_dir}"
echo "Built ${tarballs[0]}"
