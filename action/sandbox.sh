#!/usr/bin/env bash
# Makes the sandbox of Kiln's commands usable on a Linux runner, before Kiln's step: an image may
# lack bubblewrap, and Ubuntu 24.04 (GitHub's ubuntu-latest) keeps unprivileged processes from
# making the user namespaces bubblewrap needs (AppArmor). Without a working sandbox,
# `kiln run --ci` refuses every command. Changes nothing where both are already right, and only
# a GitHub-hosted runner (a throw-away machine) is changed: on a self-hosted one it says what to
# do. Where it cannot (no apt-get, no sudo), it says so and Kiln's own check decides.
# Plain shell so the test suite runs exactly this script.
set -uo pipefail
setting=${KILN_USERNS_SETTING:-/proc/sys/kernel/apparmor_restrict_unprivileged_userns}

hosted=${RUNNER_ENVIRONMENT:-}

as_root() {
  if [ "$hosted" != github-hosted ]; then
    echo "kiln action: on this self-hosted runner, run as root: $*" >&2
    return 1
  fi
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi
}

if ! command -v bwrap > /dev/null 2>&1; then
  if command -v apt-get > /dev/null 2>&1; then
    echo "kiln action: installing bubblewrap, the sandbox of Kiln's commands"
    { as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq bubblewrap; } > /dev/null \
      || echo "kiln action: could not install bubblewrap; Kiln will refuse commands" >&2
  else
    echo "kiln action: no bubblewrap and no apt-get: install bubblewrap in the job, or Kiln refuses commands" >&2
  fi
fi
# bubblewrap makes a user namespace; Ubuntu 23.10 and later refuse that to unprivileged
# processes unless this setting is 0 (the runner is a throw-away machine)
if [ "$(cat "$setting" 2> /dev/null)" = 1 ]; then
  echo "kiln action: allowing unprivileged user namespaces, which bubblewrap needs"
  as_root sh -c 'echo 0 > "$1"' sh "$setting" \
    || echo "kiln action: could not change $setting; Kiln will refuse commands" >&2
fi
exit 0
