#!/bin/sh
# Chromium and chromedriver for the browser tests of the HTML report (tests/test_html_browser.py),
# from the system package manager (Debian: apt-get install chromium chromium-driver). Part of the
# README's test command, so that command sets up every test on a fresh machine.
#
# Nothing to do when both are installed. Without a way to install them (no apt-get, not root and
# no password-less sudo) it says so and the browser tests skip with that reason, except under
# CI=true, where this is an error.
set -eu

have() { command -v "$1" >/dev/null 2>&1; }
browser() { have chromium || have chromium-browser || have google-chrome; }

if browser && have chromedriver; then
  exit 0
fi

cannot() {
  echo "cuzk-diag: cannot install Chromium for the browser tests: $1;" \
    "install chromium and chromium-driver (chromedriver) with the system package manager" >&2
  if [ "${CI:-}" = "true" ]; then
    exit 1
  fi
  exit 0
}

have apt-get || cannot "no apt-get"
if [ "$(id -u)" = "0" ]; then
  as_root=""
elif have sudo && sudo -n true 2>/dev/null; then
  as_root="sudo -n"
else
  cannot "not root and no password-less sudo"
fi

echo "cuzk-diag: installing chromium and chromium-driver for the browser tests" >&2
export DEBIAN_FRONTEND=noninteractive
$as_root apt-get update -qq
$as_root apt-get install -y -qq chromium chromium-driver >/dev/null
