#!/usr/bin/env bash
# Runs `kiln run --ci` for the GitHub Action from KILN_* variables and publishes its outputs.
# Plain shell so the test suite runs exactly this script.
set -uo pipefail

# A folder of this run's own (two Kiln steps in a job, or a matrix, each upload theirs: an
# artifact name can be used once per workflow run).
if [ -n "${KILN_ARTIFACTS:-}" ]; then
  artifacts=$KILN_ARTIFACTS
  mkdir -p "$artifacts"
else
  artifacts=$(mktemp -d "${RUNNER_TEMP:-/tmp}/kiln-artifacts-XXXXXXXX")
fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  {
    echo "artifacts=$artifacts"
    folder=${artifacts%/}
    folder=${folder##*/}
    echo "artifact-name=kiln-${GITHUB_JOB:-run}-${folder#kiln-artifacts-}"
  } >> "$GITHUB_OUTPUT"
fi
args=(run --ci --output-format json --artifacts "$artifacts" --max-steps "${KILN_MAX_STEPS:-40}")
# The event always goes along: kiln refuses runs asked for by someone without write access
# (author_association) who is not in KILN_ALLOWED_USERS, and pull requests from forks.
if [ -n "${GITHUB_EVENT_PATH:-}" ] && [ -f "$GITHUB_EVENT_PATH" ]; then
  args+=(--github-event "$GITHUB_EVENT_PATH")
fi
if [ -z "${KILN_TASK:-}" ] && { [ -z "${GITHUB_EVENT_PATH:-}" ] || [ ! -f "$GITHUB_EVENT_PATH" ]; }; then
  echo "kiln action: no task given and no event payload found" >&2
  # the step's outputs say so too, as for a run kiln refused
  [ -n "${GITHUB_OUTPUT:-}" ] && printf 'exit-code=2\noutcome=bad usage\n' >> "$GITHUB_OUTPUT"
  exit 2
fi
[ -n "${KILN_VERIFY:-}" ] && args+=(--verify "$KILN_VERIFY")
[ -n "${KILN_COMMIT_BRANCH:-}" ] && args+=(--commit-branch "$KILN_COMMIT_BRANCH")
[ -n "${KILN_COMMIT_BRANCH:-}" ] && [ "${KILN_COMMIT_PARTIAL:-}" = "true" ] && args+=(--commit-partial)
# the author input has a default; kiln refuses --author with no branch to commit
[ -n "${KILN_COMMIT_BRANCH:-}" ] && [ -n "${KILN_AUTHOR:-}" ] && args+=(--author "$KILN_AUTHOR")
[ -n "${KILN_MAX_MINUTES:-}" ] && args+=(--max-minutes "$KILN_MAX_MINUTES")
[ -n "${KILN_MAX_COST_USD:-}" ] && args+=(--max-cost-usd "$KILN_MAX_COST_USD")
[ -n "${KILN_MODEL:-}" ] && args+=(--model "$KILN_MODEL")
# The task goes in a file: as an argument, "--no-sandbox" (an issue title a workflow passed as
# the task) would turn the sandbox off, and "-" would read the step's empty stdin.
task_file=""
if [ -n "${KILN_TASK:-}" ]; then
  task_file=$(mktemp "${RUNNER_TEMP:-/tmp}/kiln-task-XXXXXXXX")
  printf '%s' "$KILN_TASK" > "$task_file"
  args+=(--task-file "$task_file")
fi
[ -z "${KILN_PROVIDER:-}" ] && unset KILN_PROVIDER

kiln_cmd=${KILN_COMMAND:-kiln}
# A runner cancels a step with SIGINT, then SIGTERM, then SIGKILL, sent to the step's shell: this
# one passes them on to kiln as SIGTERM (a background job ignores SIGINT) and waits, so kiln ends
# its run as cancelled (exit 130) and writes the summary and the patch before the SIGKILL.
$kiln_cmd "${args[@]}" > "$artifacts/report.stdout.json" &
kiln_pid=$!
trap 'kill -TERM "$kiln_pid" 2>/dev/null' INT TERM
code=0
wait "$kiln_pid" || code=$?
while kill -0 "$kiln_pid" 2>/dev/null; do  # woken by a signal: wait for kiln itself
  code=0
  wait "$kiln_pid" || code=$?
done
trap - INT TERM
[ -n "$task_file" ] && rm -f "$task_file"

# Kiln's own Python (KILN_PYTHON, the action's virtual environment): the job's PATH may have
# none (a `container:` job on a node or distroless image).
outcome=$("${KILN_PYTHON:-python3}" -c 'import json,sys; print(json.load(open(sys.argv[1])).get("outcome",""))' "$artifacts/report.stdout.json" 2>/dev/null)
if [ -z "$outcome" ]; then  # kiln stopped before its report (refused, bad input): the code says
  case "$code" in
    2) outcome="bad usage" ;;
    4) outcome="provider error" ;;
    130) outcome="cancelled" ;;
    *) outcome="failed" ;;
  esac
fi
summary="$artifacts/summary.md"
patch="$artifacts/changes.patch"
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  {
    echo "exit-code=$code"
    echo "outcome=$outcome"
    [ -f "$summary" ] && echo "summary=$summary"
    [ -f "$patch" ] && echo "patch=$patch"
  } >> "$GITHUB_OUTPUT"
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$summary" ]; then
  cat "$summary" >> "$GITHUB_STEP_SUMMARY"
fi
echo "kiln: $outcome (exit $code)"
# "changed but unverified" and "nothing to do" are results to review, not failed steps.
case "$code" in
  0|10|11) exit 0 ;;
  *) exit "$code" ;;
esac
