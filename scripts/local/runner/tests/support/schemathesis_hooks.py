"""
Schemathesis hooks for scripts/local/runner/tests/schemathesis.e2e.test.ts (loaded with SCHEMATHESIS_HOOKS).

One check of this API's own, beside schemathesis' positive_data_acceptance (which schemathesis.toml lets
accept the statuses openapi.json describes for a schema-valid body): a request schemathesis generated as
valid (positive mode) that the API refuses is refused only for what openapi.json says a schema does not
state, never for its shape. Generated identity assertions are tokens no trusted identity provider
signed, so `POST /v1/sign-requests` may refuse a schema-valid body with an `ASSERTION_*` code;
`SIGN_MESSAGE_INVALID` only when the sign message or a document name holds a character beyond the BMP
that the rule refuses (the patterns state the rule over the BMP only); `PAYLOAD_TOO_LARGE` only when
the body as sent is over the limit (CONTRACT_MAX_BODY_BYTES). The request id of a generated `GET` or
revocation names no request, so those may answer 404 `NOT_FOUND`. Anything else (`VALIDATION_FAILED`,
`INVALID_REQUEST`, ...) means the document promises what the API refuses.
"""

import datetime
import hashlib
import hmac
import os
import urllib.parse

import requests
import schemathesis

MAX_BODY_BYTES = int(os.environ["CONTRACT_MAX_BODY_BYTES"])

# Beyond the BMP: refused by the sign message's character rule (lambdas/core/src/identity/sign-message.ts)
# or, the supplementary variation selectors, counted as showing nothing; the patterns let them through.
UNSTATED = ((0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF))


def _body(case):
    return case.body if isinstance(case.body, dict) else {}


def _sent_bytes(response):
    body = getattr(response.request, "body", None) or b""
    return len(body if isinstance(body, bytes) else str(body).encode("utf-8"))


def _texts(body):
    message = body.get("signMessage")
    if isinstance(message, dict) and isinstance(message.get("text"), str):
        yield message["text"]
    for document in body.get("documents") or []:
        if isinstance(document, dict) and isinstance(document.get("name"), str):
            yield document["name"]


def _holds_unstated(body):
    return any(lo <= ord(c) <= hi for text in _texts(body) for c in text for lo, hi in UNSTATED)


def _sign_request_refusal(status, code, case, response):
    if status == 413:
        return code == "PAYLOAD_TOO_LARGE" and _sent_bytes(response) > MAX_BODY_BYTES
    if status == 400 and code == "SIGN_MESSAGE_INVALID":
        return _holds_unstated(_body(case))
    return status in (400, 401, 403) and code.startswith("ASSERTION_")


ALLOWED_REFUSALS = {
    ("POST", "/v1/sign-requests"): _sign_request_refusal,
    ("GET", "/v1/sign-requests/{id}"): lambda status, code, case, response: status == 404 and code == "NOT_FOUND",
    ("POST", "/v1/sign-requests/{id}/revocation"): lambda status, code, case, response: status == 404
    and code == "NOT_FOUND",
}


@schemathesis.check
def schema_valid_refused_only_as_documented(ctx, response, case):
    """A schema-valid request is accepted, or refused only as openapi.json describes for a schema-valid one."""
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code < 400:
        return None
    try:
        code = str(response.json()["error"]["code"])
    except (ValueError, KeyError, TypeError):  # a refusal without the error body is itself the failure
        code = ""
    allowed = ALLOWED_REFUSALS.get((case.method.upper(), case.path))
    if allowed is None or not allowed(response.status_code, code, case, response):
        raise AssertionError(
            f"A schema-valid request was refused: {response.status_code} {code or '(no error code)'}"
        )
    return None


# The document requires the API key and SigV4 together; the run's gateway does too (the test starts it with
# LOCAL_API_REQUIRE_SIGV4=1). schemathesis fills the `sigv4` scheme's Authorization header with a made-up
# value; before_call swaps it for this marker, and the session signs the request as sent (exact body, path
# and query) with the client's credentials. A request schemathesis sends without Authorization (its check
# that a missing credential is refused) stays unsigned.
SIGN_MARKER = "X-Contract-Sign"
ACCESS_KEY_ID = os.environ["CONTRACT_SIGV4_ACCESS_KEY_ID"]
SECRET_ACCESS_KEY = os.environ["CONTRACT_SIGV4_SECRET_ACCESS_KEY"]
REGION = "eu-north-1"
SERVICE = "execute-api"
SIGNED_HEADERS = "host;x-amz-content-sha256;x-amz-date"


def _escape(text):
    """encodeURIComponent, then !'()* too: the escaping of the AWS SDK's SigV4 signer."""
    return urllib.parse.quote(text, safe="-_.~")


def _canonical_path(path):
    segments = []
    for segment in path.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if segments:
                segments.pop()
        else:
            segments.append(segment)
    normalized = "/" + "/".join(segments) + ("/" if segments and path.endswith("/") else "")
    return _escape(normalized).replace("%2F", "/")


def _canonical_query(query):
    # As the gateway reads it (URLSearchParams: decoded, the last of a repeated name), sorted.
    pairs = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))
    return "&".join(f"{_escape(k)}={_escape(v)}" for k, v in sorted(pairs.items()))


def _hmac(key, text):
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


def sign(request, now=None):
    """Signs a prepared request (SigV4: host, the payload hash, the date) in place, at `now` (the time)."""
    url = urllib.parse.urlsplit(request.url)
    body = request.body or b""
    body = body if isinstance(body, bytes) else body.encode("utf-8")
    now = now or datetime.datetime.now(datetime.timezone.utc)
    amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    payload = hashlib.sha256(body).hexdigest()
    request.headers["Host"] = url.netloc
    request.headers["X-Amz-Date"] = amz_date
    request.headers["X-Amz-Content-Sha256"] = payload
    canonical = "\n".join(
        [
            request.method,
            _canonical_path(url.path),
            _canonical_query(url.query),
            f"host:{url.netloc}\nx-amz-content-sha256:{payload}\nx-amz-date:{amz_date}\n",
            SIGNED_HEADERS,
            payload,
        ]
    )
    scope = f"{day}/{REGION}/{SERVICE}/aws4_request"
    to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode("utf-8")).hexdigest()]
    )
    key = _hmac(_hmac(_hmac(_hmac(f"AWS4{SECRET_ACCESS_KEY}".encode("utf-8"), day), REGION), SERVICE), "aws4_request")
    signature = hmac.new(key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    request.headers["Authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY_ID}/{scope}, SignedHeaders={SIGNED_HEADERS}, Signature={signature}"
    )


_send = requests.Session.send


def _send_signed(session, request, **kwargs):
    if request.headers.pop(SIGN_MARKER, None) is not None:
        sign(request)
    return _send(session, request, **kwargs)


requests.Session.send = _send_signed


@schemathesis.hook
def before_call(context, case, kwargs):
    """Swaps the made-up SigV4 Authorization schemathesis generated for the marker: signed when sent."""
    for headers in (case.headers, kwargs.get("headers")):
        if headers:
            names = [n for n in headers if n.lower() == "authorization"]
            for name in names:
                del headers[name]
            if names:
                headers[SIGN_MARKER] = "1"
