#!/usr/bin/env bash
# Posts the run summary as a comment on the triggering issue or pull request.
set -euo pipefail
summary="${KILN_SUMMARY:?KILN_SUMMARY must name the summary file}"
event="${GITHUB_EVENT_PATH:?GITHUB_EVENT_PATH is not set}"
api="${GITHUB_API_URL:-https://api.github.com}"
python=${KILN_PYTHON:-python3}  # the action's own (the job may have none on its PATH)
number=$("$python" -c 'import json,sys; e=json.load(open(sys.argv[1])); print((e.get("issue") or e.get("pull_request") or {}).get("number",""))' "$event")
if [ -z "$number" ]; then
  echo "kiln action: the event has no issue or pull request to comment on; skipping" >&2
  exit 0
fi
# The body goes through a pipe (an argument holds at most 128 KB), cut to GitHub's limit of
# 65,536 characters (the API refuses a longer one), and read as UTF-8 whatever bytes it holds.
body() {
  "$python" - "$summary" <<'PY'
import json, sys
text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
LIMIT, NOTE = 65536, "\n\n*(summary cut to fit a comment; the whole one is in the run's artifacts)*\n"
if len(text) > LIMIT:
    text = text[: LIMIT - len(NOTE)] + NOTE
print(json.dumps({"body": text}))
PY
}
# The token goes to curl as a config read from a pipe (printf is a builtin): as an argument it
# would be in /proc/PID/cmdline, readable by every process of the runner while curl runs.
token=${GITHUB_TOKEN:?GITHUB_TOKEN is not set}
body | curl --silent --show-error --fail --max-time 30 \
  --config <(printf 'header = "Authorization: Bearer %s"\n' "$token") \
  -X POST \
  -H "Accept: application/vnd.github+json" \
  -H "Content-Type: application/json" \
  --data-binary @- \
  "$api/repos/${GITHUB_REPOSITORY:?GITHUB_REPOSITORY is not set}/issues/$number/comments" > /dev/null
echo "kiln: summary posted on #$number"
