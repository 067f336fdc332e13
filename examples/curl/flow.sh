#!/usr/bin/env bash
# The whole REST flow with curl: sign up, verify, create a key, edit, download.
#
#   RETOUCH_EMAIL=you@example.com RETOUCH_PASSWORD='a long password' ./flow.sh photo.jpg "remove the background" out.png
#
# With RETOUCH_API_KEY set, the account steps are skipped. Needs bash, curl and base64.
set -euo pipefail

BASE="${RETOUCH_BASE_URL:-http://localhost:3000}"
IMAGE="${1:?usage: flow.sh <image> \"<prompt>\" [output]}"
PROMPT="${2:?usage: flow.sh <image> \"<prompt>\" [output]}"
OUTPUT="${3:-result}"
JAR="$(mktemp)"
trap 'rm -f "$JAR"' EXIT

# The value of a top-level string field of a one-line JSON answer (no jq needed).
field() { sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p"; }
number() { sed -n "s/.*\"$1\":\([0-9][0-9]*\).*/\1/p"; }

if [ -z "${RETOUCH_API_KEY:-}" ]; then
  : "${RETOUCH_EMAIL:?set RETOUCH_EMAIL and RETOUCH_PASSWORD, or RETOUCH_API_KEY}"
  : "${RETOUCH_PASSWORD:?set RETOUCH_PASSWORD}"
  echo "1. Signing up $RETOUCH_EMAIL"
  curl -sS -c "$JAR" -X POST "$BASE/auth/sign-up/email" -H 'Content-Type: application/json' \
    -d "{\"email\":\"$RETOUCH_EMAIL\",\"password\":\"$RETOUCH_PASSWORD\",\"name\":\"${RETOUCH_NAME:-curl}\"}" >/dev/null

  echo "2. Open the verification link we emailed to $RETOUCH_EMAIL (waiting for it)..."
  for _ in $(seq 1 100); do
    answer=$(curl -sS -b "$JAR" -w '\n%{http_code}' -X POST "$BASE/api/keys" -H 'Content-Type: application/json' -d '{"name":"curl example"}')
    status=$(tail -n1 <<<"$answer")
    if [ "$status" = 201 ]; then
      RETOUCH_API_KEY=$(head -n1 <<<"$answer" | field key)
      break
    fi
    [ "$status" = 403 ] || { echo "creating a key answered $status: $(head -n1 <<<"$answer")" >&2; exit 1; }
    sleep 3
  done
  : "${RETOUCH_API_KEY:?the email was not verified in time}"
  echo "3. Created an API key (shown once): $RETOUCH_API_KEY"
fi
AUTH="Authorization: Bearer $RETOUCH_API_KEY"

echo "4. Submitting $IMAGE: $PROMPT"
body=$(mktemp)
printf '{"image":"%s","prompt":"%s"}' "$(base64 -w0 "$IMAGE")" "$PROMPT" >"$body"
submitted=$(curl -sS -X POST "$BASE/api/process" -H "$AUTH" -H 'Content-Type: application/json' \
  -H "Idempotency-Key: $(cat /proc/sys/kernel/random/uuid 2>/dev/null || date +%s%N)" --data-binary "@$body")
rm -f "$body"
job=$(field job_id <<<"$submitted")
[ -n "$job" ] || { echo "submission refused: $submitted" >&2; exit 1; }
echo "   job $job, $(number credits_remaining <<<"$submitted") credits left"

echo "5. Waiting for it (polling every 2 s)"
while :; do
  state=$(curl -sS "$BASE/api/process/status?job_id=$job" -H "$AUTH")
  case "$(field status <<<"$state")" in
    pending) sleep 2 ;;
    done) break ;;
    *) echo "the job failed (its credit was refunded): $state" >&2; exit 1 ;;
  esac
done

result=$(curl -sS "$BASE/api/process/result?job_id=$job" -H "$AUTH")
url=$(field url <<<"$result")
format=$(field format <<<"$result")
[ "$OUTPUT" != "${OUTPUT%.*}" ] || OUTPUT="$OUTPUT.$format"
curl -sS -o "$OUTPUT" "$url"
echo "6. Saved $OUTPUT ($format, $(number width <<<"$result")x$(number height <<<"$result"))"
