#!/usr/bin/env bash
# tools/make_docs.sh [BUILD_DIR]: regenerates the generated pages of docs/ from the built trainer
# (docs/configuration.md = `trainer --config-reference`). The docs_current test fails until the
# committed pages match.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$build/trainer" --config-reference >"$root/docs/configuration.md"
echo "make_docs: wrote docs/configuration.md ($(grep -c '^| `' "$root/docs/configuration.md") keys)"
