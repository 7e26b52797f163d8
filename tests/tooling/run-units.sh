#!/usr/bin/env bash
# Unit tests (tests/unit/, and the tooling's own in tests/tooling/tests/) with pytest from the .venv; extra arguments go to pytest.
set -euo pipefail

# shellcheck source=tests/tooling/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

require_venv
banner "unit tests: pytest tests/unit tests/tooling/tests"
cd "${REPO_ROOT}"
run_pytest tests/unit tests/tooling/tests -p no:cacheprovider "$@"
