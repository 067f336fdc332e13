"""Edit a picture with the Retouch REST API, using only the Python standard library.

    RETOUCH_API_KEY=pk_... python3 edit.py photo.jpg "remove the background" cutout.png
"""
import base64
import json
import os
import sys
import time
import urllib.error
import urllib.request
import uuid

BASE = os.environ.get("RETOUCH_BASE_URL", "http://localhost:3000").rstrip("/")
KEY = os.environ.get("RETOUCH_API_KEY")


class RetouchError(Exception):
    """The API answered an error: `code` is its machine-readable code (email_unverified, rate_limited...)."""

    def __init__(self, status, code, message, retry_after=None):
        super().__init__(f"{code} ({status}): {message}")
        self.status, self.code, self.retry_after = status, code, retry_after


def call(method, path, body=None, headers=None):
    request = urllib.request.Request(
        BASE + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        payload = json.loads(error.read() or b"{}")
        raise RetouchError(error.code, payload.get("code"), payload.get("message"), error.headers.get("Retry-After")) from None


def submit(image_path, prompt, **options):
    with open(image_path, "rb") as file:
        body = {"image": base64.b64encode(file.read()).decode(), "prompt": prompt, **options}
    # The same key on every retry: a retried submission is never charged twice.
    idempotency_key = str(uuid.uuid4())
    for attempt in range(4):
        try:
            return call("POST", "/api/process", body, {"Idempotency-Key": idempotency_key})[1]
        except RetouchError as error:
            if error.status not in (429, 502) or attempt == 3:
                raise
            time.sleep(int(error.retry_after or 2 ** attempt))


def wait(job_id, interval=2.0, timeout=600):
    deadline = time.monotonic() + timeout
    while True:
        status = call("GET", f"/api/process/status?job_id={job_id}")[1]
        if status["status"] != "pending":
            return status
        if time.monotonic() > deadline:
            raise TimeoutError(f"job {job_id} still pending after {timeout} s")
        time.sleep(interval)


def main():
    if len(sys.argv) < 3 or not KEY:
        sys.exit('usage: RETOUCH_API_KEY=pk_... python3 edit.py <image> "<prompt>" [output]')
    image, prompt = sys.argv[1], sys.argv[2]
    output = sys.argv[3] if len(sys.argv) > 3 else "result"
    job = submit(image, prompt)
    print(f"job {job['job_id']}, {job['credits_remaining']} credits left")
    status = wait(job["job_id"])
    if status["status"] == "error":
        # error_code says why (nothing_detected, model_unavailable, ...), error_message what to do.
        sys.exit(f"the edit failed ({status.get('error_code')}): {status.get('error_message')} Its credit was refunded.")
    code, result = call("GET", f"/api/process/result?job_id={job['job_id']}")
    if "." not in os.path.basename(output):
        output = f"{output}.{result['format']}"
    with urllib.request.urlopen(result["url"], timeout=60) as response, open(output, "wb") as file:
        file.write(response.read())
    print(f"saved {output}: {result['format']} {result['width']}x{result['height']}")


if __name__ == "__main__":
    try:
        main()
    except RetouchError as error:
        sys.exit(f"Retouch said {error}")
