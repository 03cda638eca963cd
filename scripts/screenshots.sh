#!/usr/bin/env bash
# Regenerates the site screenshots in docs/screenshots/ with the browser test harness
# (tests/it/publish.rs): a site published from the test fixture, opened in headless Chromium.
# Needs chromium and chromium-driver (scripts/test.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
MEASURED_SCREENSHOTS="$PWD/docs/screenshots" cargo test --locked --test it -- --exact publish::the_site_works_in_headless_chromium
ls -l docs/screenshots/publish-*.png
