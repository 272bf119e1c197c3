#!/usr/bin/env bash
# Posts the run summary as a comment on the triggering issue or pull request.
set -euo pipefail
summary="${KILN_SUMMARY:?KILN_SUMMARY must name the summary file}"
event="${GITHUB_EVENT_PATH:?GITHUB_EVENT_PATH is not set}"
api="${GITHUB_API_URL:-https://api.github.com}"
number=$(python3 -c 'import json,sys; e=json.load(open(sys.argv[1])); print((e.get("issue") or e.get("pull_request") or {}).get("number",""))' "$event")
if [ -z "$number" ]; then
  echo "kiln action: the event has no issue or pull request to comment on; skipping" >&2
  exit 0
fi
body=$(python3 -c 'import json,sys; print(json.dumps({"body": open(sys.argv[1], encoding="utf-8").read()}))' "$summary")
curl --silent --show-error --fail --max-time 30 \
  -X POST \
  -H "Authorization: Bearer ${GITHUB_TOKEN:?GITHUB_TOKEN is not set}" \
  -H "Accept: application/vnd.github+json" \
  -H "Content-Type: application/json" \
  --data "$body" \
  "$api/repos/${GITHUB_REPOSITORY:?GITHUB_REPOSITORY is not set}/issues/$number/comments" > /dev/null
echo "kiln: summary posted on #$number"
